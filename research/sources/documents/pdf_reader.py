"""PDFs are read in a separate process that is killed when it takes too long or too much.

pypdf is pure Python and carefully bounded, but a PDF is a program-like format: a file of a
few kilobytes can make any reader spend minutes (forms drawing forms drawing forms) or
gigabytes. So an uploaded PDF never meets pypdf in the web or worker process. ``read_pdf``
starts ``python -I -m research.sources.documents.pdf_reader`` with an empty environment (no
secrets, no ``PYTHON*`` variables), waits until it has imported pypdf and lowered its own
limits, sends it the file on stdin and gives it ``pdf_timeout_seconds`` of wall time to
answer on stdout; past that it is killed. Inside, the process caps its address space at what
it already maps plus ``pdf_memory_bytes`` (``RLIMIT_AS``, so an allocation beyond it fails
instead of swapping the server), its CPU time (a backstop should the parent die), and may
write no files and no core dumps.

The text is extracted by the same ``extract_pdf`` the web pipeline uses, page by page with
page spans, and bounded to the snapshot size before it is sent back as JSON (never a pickle:
the parent does not trust what comes out of the reader more than what went in).
"""

from __future__ import annotations

import io
import json
import math
import os
import select
import signal
import subprocess
import sys

from research.engine.contracts import Heading, PageSpan
from research.sources.documents.errors import DocumentRefused
from research.sources.documents.limits import DocumentLimits, format_size
from research.sources.snapshot import ExtractedText

# Starting Python and importing pypdf takes about a second on an idle machine; this only
# stops a reader that never starts (a broken installation), so it is generous.
STARTUP_TIMEOUT_SECONDS = 30.0
# The reader's first byte on stdout: "imported, limits set, send the file".
_READY = b"R"
# Exit status of a reader that ran out of memory (any value unused by Python itself).
_EXIT_OUT_OF_MEMORY = 86
# The subject of extract_pdf's sentences ("This file is a password-protected PDF ...").
_SUBJECT = "This file"


class PdfReaderUnavailable(RuntimeError):
    """The reader process could not be started: the server's fault, not the file's, so the
    caller should say "try again later" instead of refusing the document."""


def read_pdf(data: bytes, *, limits: DocumentLimits) -> tuple[ExtractedText, bool]:
    """Extract a PDF's text in a reader process; return ``(ExtractedText, truncated)``.

    ``truncated`` says that pages past the reader's page limit or text past
    ``limits.max_text_bytes`` were left out. Raises ``DocumentRefused`` when the PDF cannot
    be read, takes longer than ``limits.pdf_timeout_seconds`` or needs more than
    ``limits.pdf_memory_bytes``; raises ``PdfReaderUnavailable`` when the reader process
    cannot be started at all.
    """
    command = [
        sys.executable,
        "-I",
        "-m",
        __name__,
        str(limits.pdf_memory_bytes),
        str(limits.pdf_timeout_seconds),
        str(limits.max_text_bytes),
    ]
    try:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            bufsize=0,
            close_fds=True,
        )
    except OSError as exc:
        raise PdfReaderUnavailable(f"The PDF reader process could not start: {exc}") from None
    try:
        _await_ready(process)
        try:
            output, _ = process.communicate(data, timeout=limits.pdf_timeout_seconds)
        except subprocess.TimeoutExpired:
            raise _too_slow(limits) from None
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    return _result(process.returncode, output, limits)


def _await_ready(process: subprocess.Popen[bytes]) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTUP_TIMEOUT_SECONDS)
    if not ready or process.stdout.read(1) != _READY:
        raise PdfReaderUnavailable("The PDF reader process did not start; check the installation.")


def _too_slow(limits: DocumentLimits) -> DocumentRefused:
    return DocumentRefused(
        "timeout",
        f"This PDF took longer than {limits.pdf_timeout_seconds:g} seconds to read and was "
        "stopped; it may be damaged or built to stall PDF readers. Printing it to a new PDF "
        "often helps.",
    )


def _result(returncode: int, output: bytes, limits: DocumentLimits) -> tuple[ExtractedText, bool]:
    if returncode == _EXIT_OUT_OF_MEMORY or returncode == -signal.SIGKILL:
        # SIGKILL we did not send comes from the kernel's out-of-memory killer.
        raise DocumentRefused(
            "memory",
            f"This PDF needed more than {format_size(limits.pdf_memory_bytes)} of memory to "
            "read and was stopped; it may be damaged or built to exhaust PDF readers.",
        )
    if returncode == -signal.SIGXCPU:
        raise _too_slow(limits)
    try:
        if returncode != 0:
            raise ValueError(returncode)
        answer = json.loads(output)
        if "refused" in answer:
            raise DocumentRefused("damaged", str(answer["refused"]))
        extracted = ExtractedText(
            text=str(answer["text"]),
            headings=[Heading.model_validate(item) for item in answer["headings"]],
            pages=[PageSpan.model_validate(item) for item in answer["pages"]],
            title=str(answer["title"]),
            author=answer["author"] if isinstance(answer["author"], str) else None,
            published_at=answer["published_at"]
            if isinstance(answer["published_at"], str)
            else None,
        )
        return extracted, bool(answer["truncated"])
    except DocumentRefused:
        raise
    except (ValueError, KeyError, TypeError):
        raise DocumentRefused(
            "damaged",
            "The PDF reader failed on this file, which is probably damaged; it was not read.",
        ) from None


# --------------------------------------------------------------------------------------------
# The reader process
# --------------------------------------------------------------------------------------------


def _limit_resources(memory_bytes: int, timeout_seconds: float) -> None:
    import resource

    def lower(kind: int, value: int) -> None:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    mapped = _address_space_in_use()
    if mapped is not None:
        lower(resource.RLIMIT_AS, mapped + memory_bytes)
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(used.ru_utime + used.ru_stime)
    # The parent kills the reader at the wall-time limit; this only matters if it cannot.
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    cpu = spent + math.ceil(timeout_seconds) + 1
    resource.setrlimit(
        resource.RLIMIT_CPU, (cpu, cpu + 1 if hard == resource.RLIM_INFINITY else hard)
    )
    lower(resource.RLIMIT_FSIZE, 0)
    lower(resource.RLIMIT_CORE, 0)


def _address_space_in_use() -> int | None:
    """Bytes of address space this process maps now (Linux), or ``None`` elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _extract(data: bytes, max_text_bytes: int) -> bytes:
    from research.sources.errors import SourceError
    from research.sources.extract_pdf import MAX_PAGES, extract_pdf
    from research.sources.snapshot import bound_snapshot

    try:
        extracted = extract_pdf(data, url=_SUBJECT, max_chars=max_text_bytes)
    except SourceError as error:
        return json.dumps({"refused": error.reason}).encode("utf-8")
    snapshot = bound_snapshot(extracted.text, extracted.headings, extracted.pages, max_text_bytes)
    truncated = snapshot.truncated
    if not truncated and snapshot.pages and snapshot.pages[-1].page >= MAX_PAGES:
        truncated = _page_count(data) > MAX_PAGES
    answer = {
        "text": snapshot.text,
        "headings": [heading.model_dump() for heading in snapshot.headings],
        "pages": [page.model_dump() for page in snapshot.pages],
        "title": extracted.title,
        "author": extracted.author,
        "published_at": extracted.published_at,
        "truncated": truncated,
    }
    # pypdf can decode a broken font's text into lone surrogates, which UTF-8 cannot carry;
    # each becomes one "?", so every offset stays right.
    return json.dumps(answer, ensure_ascii=False).encode("utf-8", errors="replace")


def _page_count(data: bytes) -> int:
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(data), strict=False).pages)


def main(argv: list[str]) -> int:
    """The reader process: ``memory_bytes timeout_seconds max_text_bytes`` as arguments."""
    memory_bytes, timeout_seconds, max_text_bytes = int(argv[0]), float(argv[1]), int(argv[2])
    # Import before the limits: the address-space budget is on top of what the code needs.
    import research.sources.extract_pdf  # noqa: F401

    _limit_resources(memory_bytes, timeout_seconds)
    out = sys.stdout.buffer
    out.write(_READY)
    out.flush()
    data = sys.stdin.buffer.read()
    try:
        answer = _extract(data, max_text_bytes)
    except MemoryError:
        return _EXIT_OUT_OF_MEMORY
    out.write(answer)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
