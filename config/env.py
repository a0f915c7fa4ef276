"""Strict parsers for configuration that comes from environment variables.

Every parser raises ``ConfigError`` with one sentence that names the variable,
so a mistyped value stops start-up with a message an operator can act on.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ImproperlyConfigured):
    """A configuration variable is set to a value we cannot use."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be true or false (1/0, yes/no, on/off), not {raw!r}.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}.") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}.")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """A comma-separated list of IP addresses or networks (``127.0.0.1``, ``10.0.0.0/8``,
    ``::1``); host names are refused, because a request carries only its address."""
    networks = []
    for item in env_list(name):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(
                f"{name} must list IP addresses or networks like 127.0.0.1 or 10.0.0.0/8, "
                f"separated by commas; {item!r} is neither."
            ) from None
    return networks


def env_http_url(name: str, default: str = "") -> str:
    """An http:// or https:// address with a host, or empty."""
    raw = env_str(name, default)
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(
            f"{name} must be an http:// or https:// address with a host, like "
            f"http://127.0.0.1:4318, not {raw!r}."
        )
    try:
        parts.port  # noqa: B018 - accessing it validates the number
    except ValueError:
        raise ConfigError(f"{name} has a port that is not a number: {raw!r}.") from None
    return raw


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = env_str(name, default).lower() or default
    if value not in choices:
        raise ConfigError(
            f"{name} must be {', '.join(choices[:-1])} or {choices[-1]}, not {env_str(name)!r}."
        )
    return value


def env_json_object(name: str) -> dict:
    """A JSON object (``{}`` when unset), such as a storage backend's options."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a JSON object, and this is not valid JSON.") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object ({{...}}), not {type(value).__name__}.")
    return value


def database_config(url: str, *, sqlite_path: Path) -> dict:
    """Return a Django DATABASES entry for ``DATABASE_URL`` (SQLite in WAL mode when empty)."""
    if not url:
        return _sqlite(sqlite_path)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(
                "DATABASE_URL has a port that is not a number; expected "
                "postgresql://user:password@host:5432/dbname."
            ) from None
        name = parts.path.lstrip("/")
        if not parts.hostname or not name:
            raise ConfigError(
                "DATABASE_URL must name a host and a database, like "
                "postgresql://user:password@host:5432/dbname."
            )
        import dj_database_url

        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
        config["PORT"] = port or 5432
        return config
    if scheme == "sqlite":
        path = parts.path
        if parts.netloc or not path or path == "/":
            raise ConfigError(
                "DATABASE_URL for SQLite must be sqlite:///relative/path.db or "
                "sqlite:////absolute/path.db."
            )
        return _sqlite(Path(path[1:]) if path.startswith("/") else Path(path))
    raise ConfigError(
        f"DATABASE_URL must start with postgresql:// or sqlite:///, not {url.split(':', 1)[0]!r}."
        if "://" in url
        else "DATABASE_URL is not a URL; expected postgresql://user:password@host:5432/dbname."
    )


def _sqlite(path: Path) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            # WAL lets the in-process worker write while the web process reads;
            # IMMEDIATE transactions take the write lock up front instead of
            # failing half-way with "database is locked".
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        "TEST": {"NAME": str(path.with_name(path.stem + "-test.db"))},
    }


# Redis has 16 databases unless the server is configured otherwise; an index above that fails
# on every command, so it is refused at start-up instead.
REDIS_DATABASES = 16


@dataclass(frozen=True)
class RedisURL:
    url: str

    def with_timeouts(self, *, socket_timeout: int, connect_timeout: int) -> str:
        """The URL with explicit socket timeouts as query parameters (redis-py reads them from
        the URL), unless the operator already wrote them there."""
        parts = urlsplit(self.url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        query.setdefault("socket_timeout", str(socket_timeout))
        query.setdefault("socket_connect_timeout", str(connect_timeout))
        return urlunsplit(parts._replace(query=urlencode(query)))


def redis_url(raw: str) -> RedisURL | None:
    """Validate ``REDIS_URL``; empty means the embedded (no Redis) mode."""
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in {"redis", "rediss", "unix"}:
        raise ConfigError(
            "REDIS_URL must start with redis://, rediss:// or unix://, "
            f"like redis://127.0.0.1:6379/0, not {raw!r}."
        )
    try:
        parts.port  # noqa: B018 - accessing it validates the number
    except ValueError:
        raise ConfigError(
            "REDIS_URL has a port that is not a number, like redis://host:6379/0."
        ) from None
    if parts.scheme != "unix" and not parts.hostname:
        raise ConfigError("REDIS_URL must name a host, like redis://127.0.0.1:6379/0.")
    if parts.scheme == "unix" and not parts.path:
        raise ConfigError("REDIS_URL with unix:// must name a socket path.")
    db = parts.path.lstrip("/")
    if parts.scheme == "unix":
        db = dict(parse_qsl(parts.query)).get("db", "")
    if db and not db.isdigit():
        raise ConfigError(
            f"REDIS_URL database must be a number, like redis://host:6379/0, not {db!r}."
        )
    if db and int(db) >= REDIS_DATABASES:
        raise ConfigError(
            f"REDIS_URL database {db} does not exist on a standard Redis server, which has "
            f"databases 0 to {REDIS_DATABASES - 1}."
        )
    return RedisURL(raw)
