"""The Content-Security-Policy allows only our own scripts and styles, so no template may
rely on what it blocks. (tests/browser/test_content_security_policy.py watches real pages.)"""

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from apps.accounts.roles import Role

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted([*ROOT.glob("templates/**/*.html"), *ROOT.glob("apps/*/templates/**/*.html")])
SCRIPTS = sorted(ROOT.glob("static/js/**/*.js"))
HTMX_CONFIG = re.compile(r"""<meta name="htmx-config" content='([^']*)'>""")
BLOCKED_IN_TEMPLATES = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I),
    "inline style": re.compile(r"<style\b", re.I),
    "style attribute": re.compile(r"\sstyle=", re.I),
    "hx-on": re.compile(r"\s(data-)?hx-on", re.I),
    "event handler attribute": re.compile(r"\son[a-z]+=", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}
BLOCKED_IN_SCRIPTS = {
    "eval": re.compile(r"\beval\(|new Function\("),
    "style attribute": re.compile(r"setAttribute\(\s*['\"]style"),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def offences(paths, rules):
    found = []
    for path in paths:
        text = path.read_text()
        for name, pattern in rules.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    return found


def test_no_template_relies_on_what_the_policy_blocks():
    assert TEMPLATES
    assert offences(TEMPLATES, BLOCKED_IN_TEMPLATES) == []


def test_no_script_of_ours_relies_on_what_the_policy_blocks():
    assert offences(SCRIPTS, BLOCKED_IN_SCRIPTS) == []


@pytest.mark.parametrize(("url_name", "role"), [("login", None), ("home", Role.EXPERT)])
def test_pages_carry_the_policy_and_turn_off_htmxs_inline_style(client, make_user, url_name, role):
    if role:
        client.force_login(make_user(role))
    response = client.get(reverse(url_name))
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy
    config = json.loads(HTMX_CONFIG.search(response.content.decode()).group(1))
    assert config["includeIndicatorStyles"] is False
    assert "style" not in config["attributesToSettle"]  # htmx would setAttribute("style")


def test_every_page_that_loads_htmx_configures_it_through_the_one_partial():
    loading = [p.relative_to(ROOT) for p in TEMPLATES if "vendor/htmx/" in p.read_text()]
    assert [str(p) for p in loading] == ["templates/partials/htmx.html"]
    including = [p for p in TEMPLATES if '{% include "partials/htmx.html" %}' in p.read_text()]
    assert {str(p.relative_to(ROOT)) for p in including} == {
        "templates/base.html",
        "apps/questions/templates/admin/questions/importbatch/progress.html",
    }
