"""TLS with a pinned address: we connect to the checked IP, yet SNI and certificate
verification use the host name from the URL."""

from __future__ import annotations

import contextlib
import datetime as dt
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from research.sources.config import SourcesConfig
from research.sources.errors import SourceError
from research.sources.safe_fetch import SafeFetcher
from tests.sources.fakes import RecordingBackend, ScriptedResolver

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_pki(directory: Path, server_name: str) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for ``server_name``; returns (ca, cert, key)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("Frozen Test CA"))
        .issuer_name(_name("Frozen Test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(server_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(server_name)]), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = (
        directory / "ca.pem",
        directory / "cert.pem",
        directory / "key.pem",
    )
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, cert_path, key_path


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        body = b"<html><body><p>Served over TLS.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@contextlib.contextmanager
def _https_server(cert: Path, key: Path, seen_sni: list[str | None]) -> Iterator[int]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: seen_sni.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_tls_uses_the_host_name_while_connecting_to_the_pinned_address(tmp_path: Path) -> None:
    ca, cert, key = _write_pki(tmp_path, "pinned.test")
    seen_sni: list[str | None] = []
    with _https_server(cert, key, seen_sni) as port:
        resolver = ScriptedResolver({"pinned.test": ["127.0.0.1"]})
        backend = RecordingBackend()
        config = SourcesConfig(
            allowed_hosts=(f"pinned.test:{port}",), ca_bundle=str(ca), read_timeout=2.0
        )
        fetcher = SafeFetcher(config, resolver=resolver, network_backend=backend)

        response = fetcher.fetch(f"https://pinned.test:{port}/")

    assert response.status_code == 200
    assert b"Served over TLS" in response.content
    assert backend.attempts == [("127.0.0.1", port)]  # connected to the checked address
    assert seen_sni == ["pinned.test"]  # but introduced itself by name
    assert resolver.lookups == ["pinned.test"]


def test_certificate_for_another_name_is_rejected_even_at_the_pinned_address(
    tmp_path: Path,
) -> None:
    ca, cert, key = _write_pki(tmp_path, "someone-else.test")
    with _https_server(cert, key, []) as port:
        resolver = ScriptedResolver({"pinned.test": ["127.0.0.1"]})
        config = SourcesConfig(
            allowed_hosts=(f"pinned.test:{port}",), ca_bundle=str(ca), read_timeout=2.0
        )
        fetcher = SafeFetcher(config, resolver=resolver)

        with pytest.raises(SourceError) as refused:
            fetcher.fetch(f"https://pinned.test:{port}/")

    assert refused.value.kind == "failed"
    assert refused.value.retryable is False
    assert "certificate" in refused.value.reason
