"""The Content-Security-Policy allows only our own scripts and styles, so no template may
rely on what it blocks (`make lint` checks templates: config/lint_templates.py).
tests/browser/test_content_security_policy.py watches real pages."""

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from config import lint_templates

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted([*ROOT.glob("templates/**/*.html"), *ROOT.glob("apps/*/templates/**/*.html")])
SCRIPTS = sorted(ROOT.glob("static/js/**/*.js"))
HTMX_CONFIG = re.compile(r"""<meta name="htmx-config" content='([^']*)'>""")
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
    assert lint_templates.refused_by_the_policy() == []


def test_the_template_check_names_each_thing_the_policy_refuses_but_not_a_comment(tmp_path):
    page = tmp_path / "apps/rubrics/templates/rubrics/page.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        "{% load static %}<script src=\"{% static 'js/x.js' %}\" defer></script>\n"
        "<script>go()</script><style>p {}</style>\n"
        '<p style = "color: red" onclick="go()" hx-on:click="go()">\n'
        '<a href="javascript:go()" class="stylish one">{# <style> is refused #}</a>\n'
        '{% comment %}\n<p style="">\n{% endcomment %}<img alt="" onerror="go()">\n'
    )

    assert lint_templates.refused_by_the_policy(tmp_path) == [
        "apps/rubrics/templates/rubrics/page.html:2: an inline script",
        "apps/rubrics/templates/rubrics/page.html:2: an inline style element",
        "apps/rubrics/templates/rubrics/page.html:3: a style attribute",
        "apps/rubrics/templates/rubrics/page.html:3: an event handler attribute",
        "apps/rubrics/templates/rubrics/page.html:3: an hx-on attribute",
        "apps/rubrics/templates/rubrics/page.html:4: a javascript: URL",
        "apps/rubrics/templates/rubrics/page.html:7: an event handler attribute",
    ]


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
