"""Assay settings: one module, driven by the environment.

Every setting that differs between a laptop and production is read from an
environment variable with a documented default (see `.env.example`). Production
is `DJANGO_ENV=production`, which makes `SECRET_KEY` and `ALLOWED_HOSTS` required
and turns on the secure-cookie and HTTPS settings that `check --deploy` asks for.
"""

import datetime as dt
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# litellm downloads its price table at import unless this is set; keep the bundled one.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = env(name)
    return default if value is None else int(value)


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in (env(name, default) or "").split(",") if item.strip()]


DJANGO_ENV = env("DJANGO_ENV", "development")
PRODUCTION = DJANGO_ENV == "production"

if PRODUCTION:
    for required in ("SECRET_KEY", "ALLOWED_HOSTS"):
        if not env(required):
            raise ImproperlyConfigured(f"{required} must be set when DJANGO_ENV=production")

# The development key is only ever used with DJANGO_ENV unset; production refuses to start
# without its own (above).
SECRET_KEY = env("SECRET_KEY", "dev-only-insecure-key-0f3c9a7e1b2d4c6a8e0f1a2b3c4d5e6f")
DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# Embedded servers that `make run` / `make test` start when no URL is given (config/stack.py).
EMBEDDED_POSTGRES_PORT = env_int("EMBEDDED_POSTGRES_PORT", 54329)
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 63799)

DATABASE_URL = env("DATABASE_URL", f"postgres://postgres@127.0.0.1:{EMBEDDED_POSTGRES_PORT}/assay")
REDIS_URL = env("REDIS_URL", f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0")

# Assay's offline OpenAI-compatible provider (`python -m offline_llm`), used by the demo.
OFFLINE_LLM_URL = env("OFFLINE_LLM_URL", "http://127.0.0.1:8089/v1")


def _key_hosts(text: str) -> dict[str, frozenset[str]]:
    hosts: dict[str, frozenset[str]] = {}
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        variable, sep, listed = (part.strip() for part in entry.partition("="))
        names = frozenset(h.strip().lower() for h in listed.split(",") if h.strip())
        if not sep or not variable.isidentifier() or not names:
            raise ImproperlyConfigured(
                f"LLM_KEY_HOSTS: {entry!r} is not VARIABLE=host[,host...] (entries split by ;)"
            )
        hosts[variable] = hosts.get(variable, frozenset()) | names
    return hosts


# Where a provider key may be sent besides its provider's own host (apps/llm/params.py): a
# model config with an API base sends the key it names only to a host listed here for it,
# as host or host:port, e.g. "AZURE_API_KEY=myorg.openai.azure.com;VLLM_KEY=10.0.0.5:8000".
LLM_KEY_HOSTS = _key_hosts(env("LLM_KEY_HOSTS", ""))

# Surveys: Prolific's API (no token: reviews are recorded in Assay only; upload the approvals
# CSV instead), and how many requests one address may make to participants' pages a minute.
PROLIFIC_API_URL = env("PROLIFIC_API_URL", "https://api.prolific.com")
PROLIFIC_API_TOKEN = env("PROLIFIC_API_TOKEN", "")
# The key of the keyed hash that stands for a Prolific ID in every export and API answer but
# the approvals CSV (apps/surveys/pseudonyms.py). Empty: derived from SECRET_KEY. Changing
# either changes every pseudonym, so keep it as long as the studies' data is analysed.
PSEUDONYM_KEY = env("PSEUDONYM_KEY", "")
SURVEY_RATE_LIMIT_PER_MINUTE = env_int("SURVEY_RATE_LIMIT_PER_MINUTE", 600)

INSTALLED_APPS = [
    "apps.console.apps.ConsoleAdminConfig",  # django.contrib.admin with our site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",  # sign-in lockout (below)
    "csp",  # Content-Security-Policy (below)
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files for /api/docs/, served by us: no CDN
    "django_filters",
    "django_htmx",
    "template_partials",
    "apps.accounts",
    "apps.ops",
    "apps.llm",
    "apps.questions",
    "apps.runs",
    "apps.rubrics",
    "apps.grading",
    "apps.surveys",
    "apps.answer_studies",
    "apps.analysis",
    "apps.demo",
    "workers",  # registers how background work is queued (workers/apps.py)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Under /api/, an exception a view raises answers in the API's error shape, whatever DEBUG is.
    "apps.accounts.api_errors.ApiErrorsMiddleware",
    # Last, as axes asks: it turns a refused sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                "apps.accounts.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if env("TEST_DATABASE_NAME"):
    # Lets two test runs share one server without fighting over the test database.
    DATABASES["default"]["TEST"] = {"NAME": env("TEST_DATABASE_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "assay",
    }
}

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = env("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Collected files exist only in production images; development serves from the finders.
STATIC_ROOT = env("STATIC_ROOT", str(BASE_DIR / "staticfiles") if PRODUCTION else None)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Serve from the finders in development so `make run` needs no collectstatic step.
WHITENOISE_USE_FINDERS = not PRODUCTION

# The API (/api/v1/, config/api.py; docs/api.md): researchers only, with a token
# (`Authorization: Bearer <key>`, apps/accounts/api_auth.py) or the browser's session (the
# docs page); JSON only, nested at most api_parsers.MAX_DEPTH deep (apps/accounts/api_parsers.py);
# cursor pagination; every error in one shape (apps/accounts/api_errors.py).
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # First, so that a request without credentials is a 401 with its challenge.
        "apps.accounts.api_auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.roles.IsResearcher"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.accounts.api_parsers.BoundedJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "apps.console.api_pages.CursorPage",
    "PAGE_SIZE": 100,
    # Money and other decimals as JSON numbers, as the long lists' rows (written by
    # PostgreSQL) carry them; the CSV exports keep every digit.
    "COERCE_DECIMAL_TO_STRING": False,
    "EXCEPTION_HANDLER": "apps.accounts.api_errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Assay API",
    "DESCRIPTION": (
        "Read and export Assay's studies, runs and results, and start and control runs. "
        "Researchers only: `Authorization: Bearer <key>` with a key from /accounts/tokens/. "
        "Lists are cursor-paginated (follow `next`); every error has the `Error` shape."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SERVE_PERMISSIONS": ["apps.accounts.roles.IsResearcher"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name for each set of choices that several fields share (runs' statuses, kinds).
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "apps.llm.models.RunStatus",
        "ResponseStatusEnum": "apps.runs.models.ResponseStatus",
        "CallStateEnum": "apps.grading.models.CallState",
        "CriterionKindEnum": "apps.rubrics.models.Kind",
        "ParticipantKindEnum": "apps.surveys.models.ParticipantKind",
        "LengthBucketEnum": "apps.questions.models.LengthBucket",
        "ColumnKindEnum": ["text", "int", "float", "percent"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.accounts.api_errors.errors_documented",
    ],
}

# Celery. A task that outlives the broker's visibility timeout is delivered a second time
# while the first copy still runs, so the hard time limit must stay well under it.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None  # results live in our own tables, counted from the database
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 2 * 60 * 60)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 30 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 28 * 60)
if CELERY_TASK_TIME_LIMIT * 2 > CELERY_VISIBILITY_TIMEOUT:
    raise ImproperlyConfigured(
        "CELERY_TASK_TIME_LIMIT must be at most half of CELERY_VISIBILITY_TIMEOUT"
    )
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE_FILENAME = env(
    "CELERY_BEAT_SCHEDULE_FILENAME", str(BASE_DIR / ".data" / "celerybeat-schedule")
)

# Where uploaded files of candidate posts wait for the worker that imports them (deleted once
# imported or refused): a directory the web server and the `default` queue's workers share.
POST_UPLOAD_DIR = env("POST_UPLOAD_DIR", str(BASE_DIR / ".data" / "post-uploads"))

# Claim leases (apps/llm/leases.py). A worker holding a row renews its lease every third of
# this; when the worker dies the lease runs out and a periodic task hands the row to another
# worker, so a dead worker costs about one lease rather than the broker's visibility timeout.
# Shorter than the hard time limit: the lease, not the time limit, is what notices a death.
LLM_LEASE_SECONDS = env_int("LLM_LEASE_SECONDS", 2 * 60)
if not 3 <= LLM_LEASE_SECONDS < CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        "LLM_LEASE_SECONDS must be at least 3 and less than CELERY_TASK_TIME_LIMIT"
    )
# How many batch chains work one run at once (workers/engine.py): at least the number of
# worker processes on the `llm` queue that should share it.
LLM_ENGINE_CHAINS = env_int("LLM_ENGINE_CHAINS", 4)
# Batch mode (apps/llm/batches.py): how often beat reads the open provider batches; how many
# rows one task claims and writes into batch files at a time (their requests are built in
# memory); how long a worker submitting or reading a batch holds it before another may.
LLM_BATCH_POLL_SECONDS = env_int("LLM_BATCH_POLL_SECONDS", 30)
LLM_BATCH_ROWS = env_int("LLM_BATCH_ROWS", 2000)
LLM_BATCH_HOLD_SECONDS = env_int("LLM_BATCH_HOLD_SECONDS", 300)

SESSION_ENGINE = "django.contrib.sessions.backends.db"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Behind a TLS-terminating proxy (compose, a load balancer) the scheme comes in a header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 60 * 60 * 24 * 365)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    # /healthz is probed over plain HTTP by the orchestrator, inside the private network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # A refused request (4xx) is logged as one line without its traceback; a 5xx keeps it.
    # On django.request itself, so every handler sees the line; on the handler too, for
    # django.security.<ExceptionName>, whose child loggers a logger filter would not reach.
    "filters": {"refusals": {"()": "config.logfilters.RefusalWithoutTraceback"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["refusals"],
        }
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"filters": ["refusals"]},
        "django.db.backends": {"level": "WARNING"},
        # litellm and httpx log every request at INFO: noise, and CPU in the hot path.
        "LiteLLM": {"level": "WARNING"},
        "LiteLLM Router": {"level": "WARNING"},
        "LiteLLM Proxy": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# AxesStandaloneBackend comes first: it refuses a locked-out sign-in before any password is
# checked, and it needs the request, so `authenticate()` must always be given one.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "apps.accounts.backends.RoleBackend",
]

# --- Sign-in lockout (django-axes) -------------------------------------------------------
# After ASSAY_LOGIN_FAILURE_LIMIT wrong passwords for one username from one address, that
# pair is refused (429, with registration/locked_out.html) on /accounts/login/ and
# /admin/login/ alike until the cool-off ends or a researcher unlocks it in the console.
# Locking the pair, not the address alone, keeps one guesser from locking out a whole lab
# behind one NAT; not the username alone, so that a stranger cannot lock a user out.
# One password tried on many usernames (spraying) is stopped by a second, higher limit: after
# ASSAY_LOGIN_ADDRESS_FAILURE_LIMIT wrong passwords from one address within the cool-off, over
# any usernames, that address is refused in the same way (apps/accounts/lockout.py; axes has
# one limit for every combination it counts, hence its handler subclassed).
# The address is REMOTE_ADDR, as for the survey rate limit: a proxy must pass it on.
AXES_FAILURE_LIMIT = env_int("ASSAY_LOGIN_FAILURE_LIMIT", 5)
SIGN_IN_ADDRESS_FAILURE_LIMIT = env_int("ASSAY_LOGIN_ADDRESS_FAILURE_LIMIT", 20)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("ASSAY_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "apps.accounts.lockout.SignInLockout"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "apps.accounts.views.locked_out"
AXES_HTTP_RESPONSE_CODE = 429
AXES_ENABLE_ADMIN = False  # apps/accounts/admin.py registers them, with the unlock action
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_VERBOSE = False  # its banner on every process start; lockouts are still logged
# Masked in axes' log lines and stored POST bodies (the password always is). The first two
# are axes' defaults; a stored CSRF token would give away the user's CSRF secret.
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "csrfmiddlewaretoken"]

# --- Content-Security-Policy (django-csp) ------------------------------------------------
# Only our own files run or style a page: no inline script, inline style, style="" or hx-on
# anywhere (htmx is configured to add none in templates/partials/htmx.html; its indicator CSS
# is in assay.css). Participants' pages load nothing from a third-party host either.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
