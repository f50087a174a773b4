import os
import secrets
import subprocess
import sys

from tests.conftest import ROOT

PRODUCTION_ENV = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "assay.example.org",
}


def manage(*args, env):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    env = dict(os.environ, **PRODUCTION_ENV)
    env.pop("DEBUG", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set for the browser tests only
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = dict(os.environ, **PRODUCTION_ENV)
    env.pop("SECRET_KEY")
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_turns_debug_off_and_secures_cookies():
    env = dict(os.environ, **PRODUCTION_ENV)
    code = (
        "from django.conf import settings as s;"
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.ALLOWED_HOSTS)"
    )
    result = manage("shell", "--no-imports", "-c", code, env=env)
    assert result.stdout.strip() == "False True True ['assay.example.org']", result.stderr


def test_the_sign_in_lockout_is_set_from_the_environment():
    env = dict(os.environ, ASSAY_LOGIN_FAILURE_LIMIT="3", ASSAY_LOGIN_COOLOFF_MINUTES="45")
    code = "from django.conf import settings as s; print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME)"
    result = manage("shell", "--no-imports", "-c", code, env=env)
    assert result.stdout.strip() == "3 0:45:00", result.stderr
