"""Configuration comes from the environment; bad values stop start-up with one sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import ConfigError, database_config, env_bool, redis_url

pytestmark = pytest.mark.service_neutral

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    base.pop("DJANGO_SETTINGS_MODULE", None)
    base["DATA_DIR"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DATABASE_URL", "mysql://root@localhost/db"),
        ("DATABASE_URL", "postgresql://user@host:notaport/db"),
        ("DATABASE_URL", "postgresql://user@host:5432/"),
        ("DATABASE_URL", "just some words"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("REDIS_URL", "redis://:6379/0"),
        ("REDIS_URL", "redis://127.0.0.1:port/0"),
        ("REDIS_URL", "redis://127.0.0.1:6379/16"),
        ("REDIS_SOCKET_TIMEOUT", "5"),
        ("DEBUG", "maybe"),
        ("RESEARCH_SEARCH_PROVIDERS", "bing"),
        ("RESEARCH_FETCH_CONNECT_TIMEOUT", "soon"),
        ("RESEARCH_FETCH_ALLOWED_HOSTS", "http://intranet/"),
        ("RESEARCH_MAX_DEPTH", "bottomless"),
        ("RESEARCH_DOCUMENT_MAX_BYTES", "20MB"),
        ("RESEARCH_DOCUMENT_PDF_MEMORY_BYTES", "1000"),
        ("RESEARCH_LIBRARY_MAX_BYTES", "2048"),
        ("LLM_OUTPUT_MODE", "magic"),
        ("LLM_TIMEOUT_SECONDS", "soon"),
        ("SEARXNG_URL", "notaurl"),
        ("SEARXNG_URL", "http://"),
        ("BRAVE_API_URL", "ftp://search.example.org/"),
        ("TAVILY_API_URL", "https://user:secret@api.example.org/search"),
        ("RESEARCH_WIKIPEDIA_API_URL", "en.wikipedia.org/w/api.php"),
        ("RESEARCH_ARXIV_API_URL", "export.arxiv.org"),
        ("RESEARCH_FETCH_CA_BUNDLE", "/nonexistent/intranet-ca.pem"),
        ("RESEARCH_FETCH_DOMAIN_INTERVAL", "-1"),
        ("RESEARCH_SEARCH_PROVIDER_INTERVAL", "-0.5"),
        ("LOG_LEVEL", "verbose"),
        ("ALLOWED_HOSTS", ""),
        ("DEMO_USERNAME", "demo user"),
        ("WORKER_BROKER_UNREACHABLE_SECONDS", "0"),
        ("RESEARCH_MAX_RUNS_PER_USER_PER_HOUR", "0"),
        ("RESEARCH_MAX_PLANNING_RUNS_PER_USER", "none"),
    ],
)
def test_malformed_variable_stops_startup_with_one_sentence(tmp_path, variable, value):
    result = manage("check", env={variable: value}, tmp_path=tmp_path)
    assert result.returncode != 0
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Configuration error: ")
    assert variable in lines[0]
    assert "Traceback" not in result.stderr


def assert_one_sentence_naming(result: subprocess.CompletedProcess, variable: str) -> str:
    assert result.returncode != 0
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Configuration error: {variable}")
    return lines[0]


def test_a_data_dir_that_is_a_file_stops_startup(tmp_path):
    not_a_directory = tmp_path / "data"
    not_a_directory.write_text("a file")
    result = manage("check", env={"DATA_DIR": str(not_a_directory)}, tmp_path=tmp_path)
    assert "is a file; it must name a directory" in assert_one_sentence_naming(result, "DATA_DIR")


def test_a_ca_bundle_that_is_not_pem_stops_startup(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("this is not a certificate\n")
    result = manage("check", env={"RESEARCH_FETCH_CA_BUNDLE": str(bundle)}, tmp_path=tmp_path)
    line = assert_one_sentence_naming(result, "RESEARCH_FETCH_CA_BUNDLE")
    assert "cannot be read as PEM certificates" in line


def test_good_endpoints_and_a_real_ca_bundle_pass(tmp_path):
    import certifi

    env = {
        "SEARXNG_URL": "http://127.0.0.1:8888",
        "BRAVE_API_URL": "https://api.search.brave.com/res/v1/web/search",
        "RESEARCH_FETCH_CA_BUNDLE": certifi.where(),
        "LOG_LEVEL": "warning",
        "RESEARCH_FETCH_DOMAIN_INTERVAL": "0",
    }
    result = manage("check", env=env, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr


def test_deploy_check_passes_with_production_settings(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "DEBUG": "false",
            "HTTPS_ONLY": "true",
            "SECRET_KEY": "k" * 20 + "-production-secret-key-that-is-long-enough-9f8e7d",
            "ALLOWED_HOSTS": "research.example.org",
            "CSRF_TRUSTED_ORIGINS": "https://research.example.org",
        },
        tmp_path=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_cookies_are_secure_httponly_and_samesite(tmp_path):
    code = (
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY,"
        " s.CSRF_COOKIE_HTTPONLY, s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE)"
    )
    result = manage(
        "shell", "--no-imports", "-c", code, env={"HTTPS_ONLY": "true"}, tmp_path=tmp_path
    )
    assert result.stdout.strip().splitlines()[-1].split() == [
        "True",
        "True",
        "True",
        "True",
        "Lax",
        "Lax",
    ]


def test_unset_database_url_means_sqlite_in_wal_mode(tmp_path):
    config = database_config("", sqlite_path=tmp_path / "db.sqlite3")
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert "journal_mode=WAL" in config["OPTIONS"]["init_command"]


def test_postgresql_url_is_parsed(tmp_path):
    config = database_config("postgresql://u:p@db.internal:6543/research", sqlite_path=tmp_path)
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == (
        "db.internal",
        6543,
        "research",
        "u",
    )


def test_redis_url_empty_means_embedded_mode():
    assert redis_url("") is None
    assert redis_url("redis://127.0.0.1:6379/2").url == "redis://127.0.0.1:6379/2"


def test_redis_gets_explicit_socket_timeouts_unless_the_url_sets_them():
    plain = redis_url("redis://127.0.0.1:6379/2")
    assert plain.with_timeouts(socket_timeout=15, connect_timeout=5) == (
        "redis://127.0.0.1:6379/2?socket_timeout=15&socket_connect_timeout=5"
    )
    own = redis_url("redis://127.0.0.1:6379/2?socket_timeout=40")
    assert own.with_timeouts(socket_timeout=15, connect_timeout=5) == (
        "redis://127.0.0.1:6379/2?socket_timeout=40&socket_connect_timeout=5"
    )


def test_short_secret_key_is_refused(tmp_path):
    result = manage("check", env={"SECRET_KEY": "short"}, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_env_bool_names_the_variable(monkeypatch):
    monkeypatch.setenv("SOME_FLAG", "perhaps")
    with pytest.raises(ConfigError, match="SOME_FLAG"):
        env_bool("SOME_FLAG")


def test_model_endpoint_with_a_bad_scheme_stops_startup(tmp_path):
    result = manage(
        "check",
        env={"LLM_BASE_URL": "ftp://models.internal/v1", "LLM_MODEL": "m"},
        tmp_path=tmp_path,
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "Configuration error: LLM_BASE_URL must start with http:// or https://, "
        "not 'ftp://models.internal/v1'."
    ]


def test_migrations_match_the_models(tmp_path):
    result = manage("makemigrations", "--check", "--dry-run", env={}, tmp_path=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
