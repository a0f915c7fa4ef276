"""Django settings, read from environment variables.

Every variable is documented in docs/configuration.md. Unset variables give the
embedded default: a SQLite file, an in-process worker and no external services.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from config.env import (
    ConfigError,
    database_config,
    env_bool,
    env_choice,
    env_http_url,
    env_int,
    env_json_object,
    env_list,
    env_networks,
    env_str,
    redis_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR") or BASE_DIR / "var").resolve()
if DATA_DIR.exists() and not DATA_DIR.is_dir():
    raise ConfigError(f"DATA_DIR {DATA_DIR} is a file; it must name a directory.")
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as _exc:
    raise ConfigError(f"DATA_DIR {DATA_DIR} cannot be created ({_exc.strerror or _exc}).") from None
if not os.access(DATA_DIR, os.W_OK | os.X_OK):
    raise ConfigError(f"DATA_DIR {DATA_DIR} is not writable by this process.")


def _secret_key() -> str:
    configured = env_str("SECRET_KEY")
    if configured:
        if len(configured) < 50:
            raise ConfigError("SECRET_KEY must be at least 50 characters long.")
        return configured
    # No key configured: keep a generated one in the data directory so sessions
    # survive restarts of a zero-setup install.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(64))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
if not ALLOWED_HOSTS and not DEBUG:
    raise ConfigError(
        "ALLOWED_HOSTS is set but empty, so every request would be refused; list the host "
        "names the app answers to, like research.example.org,localhost."
    )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise ConfigError(
            f"CSRF_TRUSTED_ORIGINS entries must start with http:// or https://, not {_origin!r}."
        )

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "axes",
    "django_dramatiq",
    # The JSON API (research.api); listed so its docs page uses the bundled Swagger UI files
    # instead of a CDN.
    "ninja",
    "accounts",
    "research",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before the session and every view: a NUL must not reach the database (see the class).
    "config.middleware.RefuseNulCharactersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Axes must come last so it sees the outcome of authentication.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": database_config(env_str("DATABASE_URL"), sqlite_path=DATA_DIR / "db.sqlite3")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "research:dashboard"
LOGOUT_REDIRECT_URL = "accounts:login"

# Login throttling (django-axes): lock a username+address pair after repeated failures.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "accounts/locked_out.html"
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    # Uploaded library documents: files under DATA_DIR by default; any Django storage backend
    # (an S3-compatible store through django-storages, docs/documents.md) by dotted path, its
    # options as a JSON object.
    "documents": {
        "BACKEND": env_str("DOCUMENT_STORAGE_BACKEND")
        or "django.core.files.storage.FileSystemStorage",
        "OPTIONS": (
            env_json_object("DOCUMENT_STORAGE_OPTIONS")
            if env_str("DOCUMENT_STORAGE_BACKEND")
            else {"location": str(DATA_DIR / "documents")}
        ),
    },
}
# Serve straight from the source folders too, so `make run` needs no collectstatic.
WHITENOISE_USE_FINDERS = True

# Redis carries background jobs and live-progress messages when configured;
# without it both stay inside the server process.
REDIS = redis_url(env_str("REDIS_URL"))
# The zero-setup default (no DATABASE_URL, no REDIS_URL): one machine, SQLite, worker threads
# inside the server. Only then does the login page mention the demo account.
EMBEDDED_MODE = REDIS is None and not env_str("DATABASE_URL")
EMBEDDED_WORKER = REDIS is None and env_bool("EMBEDDED_WORKER", True)
EMBEDDED_WORKER_THREADS = env_int("EMBEDDED_WORKER_THREADS", 2, minimum=1)

_DRAMATIQ_MIDDLEWARE = [
    "dramatiq.middleware.AgeLimit",
    "dramatiq.middleware.TimeLimit",
    "dramatiq.middleware.Callbacks",
    "dramatiq.middleware.Retries",
    "django_dramatiq.middleware.DbConnectionsMiddleware",
    "research.worker.reaper.ReaperMiddleware",
    "research.worker.broker_watchdog.BrokerWatchdog",
]
# Explicit Redis socket timeouts. redis-py 8 defaults to 5 s, the same as channels-redis'
# blocking read (BZPOPMIN with a 5-s timeout), so a quiet WebSocket's read timed out and the
# socket was closed with 1011. The read timeout must stay above that 5 s; 15 s leaves room for
# a slow server while still noticing a dead connection.
REDIS_SOCKET_TIMEOUT = env_int("REDIS_SOCKET_TIMEOUT", 15, minimum=6)
REDIS_CONNECT_TIMEOUT = env_int("REDIS_CONNECT_TIMEOUT", 5, minimum=1)
if REDIS:
    _REDIS_URL = REDIS.with_timeouts(
        socket_timeout=REDIS_SOCKET_TIMEOUT, connect_timeout=REDIS_CONNECT_TIMEOUT
    )
    DRAMATIQ_BROKER = {
        "BROKER": "dramatiq.brokers.redis.RedisBroker",
        "OPTIONS": {"url": _REDIS_URL},
        "MIDDLEWARE": _DRAMATIQ_MIDDLEWARE,
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [_REDIS_URL]},
        }
    }
else:
    DRAMATIQ_BROKER = {
        "BROKER": "dramatiq.brokers.stub.StubBroker",
        "OPTIONS": {},
        "MIDDLEWARE": _DRAMATIQ_MIDDLEWARE,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
DRAMATIQ_AUTODISCOVER_MODULES = ["worker.actors"]

# Security. HTTPS_ONLY turns on everything that needs TLS in front of the app.
HTTPS_ONLY = env_bool("HTTPS_ONLY", False)
SESSION_COOKIE_SECURE = HTTPS_ONLY
CSRF_COOKIE_SECURE = HTTPS_ONLY
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_SSL_REDIRECT = HTTPS_ONLY and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0) if HTTPS_ONLY else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# Research runs.
RESEARCH_MAX_DEPTH = env_str("RESEARCH_MAX_DEPTH", "thorough")
if RESEARCH_MAX_DEPTH not in ("quick", "standard", "thorough"):
    raise ConfigError(
        f"RESEARCH_MAX_DEPTH must be quick, standard or thorough, not {RESEARCH_MAX_DEPTH!r}."
    )
RESEARCH_MAX_ACTIVE_RUNS_PER_USER = env_int("RESEARCH_MAX_ACTIVE_RUNS_PER_USER", 2, minimum=1)
RESEARCH_MAX_ACTIVE_RUNS = env_int("RESEARCH_MAX_ACTIVE_RUNS", 4, minimum=1)
# Per-user limits on new research: each run costs at least one planner call. Twenty an hour
# is more than a person reviews; three plans in drafting at once keeps one person from
# holding every worker thread with planner calls.
RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = env_int("RESEARCH_MAX_RUNS_PER_USER_PER_HOUR", 20, minimum=1)
# Requests one personal API token may make per minute (research.api); more get 429.
API_TOKEN_REQUESTS_PER_MINUTE = env_int("API_TOKEN_REQUESTS_PER_MINUTE", 120, minimum=1)
# Webhooks (research.worker.webhooks): private or intranet targets they may post to (same syntax as
# RESEARCH_FETCH_ALLOWED_HOSTS; metadata addresses are always refused), attempts per event,
# seconds per attempt, and the address links in payloads start with.
WEBHOOK_ALLOWED_HOSTS = env_list("WEBHOOK_ALLOWED_HOSTS")
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5, minimum=1)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
WEBHOOK_PUBLIC_URL = env_str("WEBHOOK_PUBLIC_URL", "http://127.0.0.1:8000")
RESEARCH_MAX_PLANNING_RUNS_PER_USER = env_int("RESEARCH_MAX_PLANNING_RUNS_PER_USER", 3, minimum=1)
# Questions asked of reports in any hour: per person, and per run for people holding its share
# link (when the owner lets them ask). Each answer with a model configured costs one model call.
RESEARCH_MAX_QUESTIONS_PER_HOUR = env_int("RESEARCH_MAX_QUESTIONS_PER_HOUR", 60, minimum=1)
RESEARCH_LEASE_SECONDS = env_int("RESEARCH_LEASE_SECONDS", 90, minimum=10)
RESEARCH_REAPER_INTERVAL_SECONDS = env_int("RESEARCH_REAPER_INTERVAL_SECONDS", 30, minimum=1)
# Worker attempts in a row that may end in an unexpected error before the run is failed
# (research/worker/crashes.py). One crash can be a passing fault (a dropped connection, a worker
# killed mid-write); three in a row are a bug or a bad input that more attempts will not
# fix, and at the default reaper interval they give up within about a minute and a half.
RESEARCH_WORKER_MAX_ATTEMPTS = env_int("RESEARCH_WORKER_MAX_ATTEMPTS", 3, minimum=1)
# The model client the worker's orchestrator talks to: a dotted path to a callable that
# takes no arguments and returns a research.engine.ports.ModelClient. Empty: the configured
# model endpoint (LLM_*), or the extractive backend when none is configured. A Django
# setting only (tests and evaluations point it at their scripted models), not a variable.
RESEARCH_MODEL_CLIENT = ""

# Source acquisition (research/sources). Values pass through as written;
# research.sources.config parses them and the research app checks them at start-up,
# naming the variable when one is wrong. docs/configuration.md lists them.
SOURCES_VARIABLES = (
    "RESEARCH_FETCH_ALLOWED_HOSTS",
    "RESEARCH_FETCH_STATIC_HOSTS",
    "RESEARCH_FETCH_USER_AGENT",
    "RESEARCH_FETCH_CONNECT_TIMEOUT",
    "RESEARCH_FETCH_READ_TIMEOUT",
    "RESEARCH_FETCH_TOTAL_TIMEOUT",
    "RESEARCH_FETCH_MIN_PROGRESS_BYTES",
    "RESEARCH_FETCH_MAX_BYTES",
    "RESEARCH_FETCH_MAX_PDF_BYTES",
    "RESEARCH_FETCH_MAX_REDIRECTS",
    "RESEARCH_FETCH_CA_BUNDLE",
    "RESEARCH_FETCH_DOMAIN_INTERVAL",
    "RESEARCH_SEARCH_PROVIDERS",
    "RESEARCH_SEARCH_MODE",
    "RESEARCH_SEARCH_TIMEOUT",
    "RESEARCH_SEARCH_PROVIDER_INTERVAL",
    "RESEARCH_RETRY_MAX_ATTEMPTS",
    "SEARXNG_URL",
    "BRAVE_API_KEY",
    "BRAVE_API_URL",
    "TAVILY_API_KEY",
    "TAVILY_API_URL",
    "RESEARCH_WIKIPEDIA_API_URL",
    "RESEARCH_ARXIV_API_URL",
    "RESEARCH_DDGS_BACKEND",
    "RESEARCH_SCHOLARLY_MAILTO",
    "RESEARCH_OPENALEX_API_URL",
    "OPENALEX_API_KEY",
    "RESEARCH_CROSSREF_API_URL",
    "RESEARCH_PUBMED_API_URL",
    "NCBI_API_KEY",
    "RESEARCH_NCBI_TOOL",
    "RESEARCH_SEMANTIC_SCHOLAR_API_URL",
    "SEMANTIC_SCHOLAR_API_KEY",
)
for _name in SOURCES_VARIABLES:
    if env_str(_name):
        globals()[_name] = env_str(_name)

# Uploaded documents (research/sources/documents/limits.py holds the defaults and
# research.apps checks that they fit together). docs/configuration.md lists them.
for _name, _minimum in (
    ("RESEARCH_DOCUMENT_MAX_BYTES", 1024),
    ("RESEARCH_LIBRARY_MAX_BYTES", 1024),
    ("RESEARCH_DOCUMENT_PDF_TIMEOUT_SECONDS", 1),
    ("RESEARCH_DOCUMENT_PDF_MEMORY_BYTES", 64 * 1024 * 1024),
):
    if env_str(_name):
        globals()[_name] = env_int(_name, 0, minimum=_minimum)

# Language model (research/llm). With no base URL and no model, the extractive
# backend is used: the product works without a key.
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
LLM_MODEL_PLANNER = env_str("LLM_MODEL_PLANNER")
LLM_MODEL_DECIDER = env_str("LLM_MODEL_DECIDER")
LLM_MODEL_EXTRACTOR = env_str("LLM_MODEL_EXTRACTOR")
LLM_MODEL_SYNTHESIZER = env_str("LLM_MODEL_SYNTHESIZER")
LLM_MODEL_VERIFIER = env_str("LLM_MODEL_VERIFIER")
LLM_TIMEOUT_SECONDS = env_int("LLM_TIMEOUT_SECONDS", 120, minimum=1)
LLM_MAX_CONCURRENCY = env_int("LLM_MAX_CONCURRENCY", 4, minimum=1)
LLM_MAX_ATTEMPTS = env_int("LLM_MAX_ATTEMPTS", 3, minimum=1)
LLM_MAX_RETRY_WAIT_SECONDS = env_int("LLM_MAX_RETRY_WAIT_SECONDS", 60, minimum=0)
LLM_OUTPUT_MODE = env_str("LLM_OUTPUT_MODE").lower()
if LLM_OUTPUT_MODE not in ("", "auto", "json_schema", "json_object", "prompt"):
    raise ConfigError(
        "LLM_OUTPUT_MODE must be auto, json_schema, json_object or prompt, "
        f"not {LLM_OUTPUT_MODE!r}."
    )

DEMO_USERNAME = env_str("DEMO_USERNAME", "demo")
# The characters and length Django's own username validator accepts.
if not re.fullmatch(r"[\w.@+-]{1,150}", DEMO_USERNAME):
    raise ConfigError(
        "DEMO_USERNAME may use letters, digits and @ . + - _ only (at most 150), "
        f"not {DEMO_USERNAME!r}."
    )
DEMO_PASSWORD = env_str("DEMO_PASSWORD")

# A rundramatiq worker whose broker stays unreachable this long exits with status 3, so a
# supervisor restarts it (and its log says why) instead of it retrying silently forever.
# A minute rides out a Redis restart or failover; see docs/deployment.md.
WORKER_BROKER_UNREACHABLE_SECONDS = env_int("WORKER_BROKER_UNREACHABLE_SECONDS", 60, minimum=1)

# Operations (docs/operations.md). /metrics is off unless METRICS_ENABLED; when on it answers
# only a request with the bearer token or from an allowed address (at least one is required).
METRICS_ENABLED = env_bool("METRICS_ENABLED", False)
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOWED_ADDRESSES = env_networks("METRICS_ALLOWED_ADDRESSES")
if METRICS_TOKEN and len(METRICS_TOKEN) < 24:
    raise ConfigError("METRICS_TOKEN must be at least 24 characters long, so it cannot be guessed.")
if METRICS_ENABLED and not (METRICS_TOKEN or METRICS_ALLOWED_ADDRESSES):
    raise ConfigError(
        "METRICS_ENABLED is on but neither METRICS_TOKEN nor METRICS_ALLOWED_ADDRESSES is set; "
        "set a bearer token or the addresses Prometheus scrapes from."
    )
# prometheus_client's own variable: where each process writes its values (multiprocess mode).
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR and not (
    os.path.isdir(PROMETHEUS_MULTIPROC_DIR)
    and os.access(PROMETHEUS_MULTIPROC_DIR, os.W_OK | os.X_OK)
):
    raise ConfigError(
        f"PROMETHEUS_MULTIPROC_DIR {PROMETHEUS_MULTIPROC_DIR} must be an existing directory "
        "this process can write to (create it, empty, before the server and workers start)."
    )
# Tracing: our variable, else OpenTelemetry's own; empty means no tracing.
TRACING_OTLP_ENDPOINT = env_http_url("TRACING_OTLP_ENDPOINT") or env_http_url(
    "OTEL_EXPORTER_OTLP_ENDPOINT"
)
LOG_FORMAT = env_choice("LOG_FORMAT", ("plain", "json"), "plain")

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ConfigError(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {env_str('LOG_LEVEL')!r}."
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "config.logs.JsonFormatter"},
    },
    # Chatty libraries speak only at WARNING and above unless LOG_LEVEL is DEBUG (see
    # config.logs: some set their own logger levels, so a handler filter is what holds).
    # Every record gets the run and step being worked on (config.logs.ResearchContext).
    "filters": {
        "quiet_libraries": {"()": "config.logs.QuietLibraries"},
        "research_context": {"()": "config.logs.ResearchContext"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["research_context"] + ([] if LOG_LEVEL == "DEBUG" else ["quiet_libraries"]),
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}
