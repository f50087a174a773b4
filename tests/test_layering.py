"""The layering of docs/architecture.md is checked by a machine (`make lint`): import-linter's
contracts in .importlinter, and config/lint_templates.py for templates. These tests show that
each rule can fail: a violation added on purpose, to a copy of the tree, breaks it."""

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config import lint_templates

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("apps", "config", "workers", "offline_llm", "stats")

# contract id -> (module of the copy to change, the import that breaks the contract)
VIOLATIONS = {
    "app-layers": ("apps/surveys/models.py", "from apps.surveys import views"),
    "app-graph": ("apps/questions/models.py", "import apps.runs.models"),
    "platform": ("apps/accounts/views.py", "import apps.rubrics.selectors"),
    "gateway": ("apps/llm/gateway.py", "import apps.runs.models"),
    "questions": ("apps/questions/admin.py", "import apps.surveys.models"),
    "runs": ("apps/runs/admin.py", "import apps.rubrics.models"),
    "surveys": ("apps/surveys/admin.py", "import apps.questions.models"),
    "analysis": ("apps/ops/views.py", "import apps.analysis"),
    "tasks-on-top": ("apps/ops/views.py", "import workers.ops"),
    "no-cycles": ("apps/grading/services/rows.py", "from apps.grading.services import work"),
    "offline-provider-apart": ("config/stack.py", "import offline_llm"),
    "offline-provider-standalone": ("offline_llm/server.py", "import django.conf"),
    "stats-standalone": ("stats/agreement.py", "import apps.grading.models"),
}


def contract_ids() -> set[str]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    prefix = "importlinter:contract:"
    return {s.removeprefix(prefix) for s in parser.sections() if s.startswith(prefix)}


def copy_tree(destination: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "templates", "fixtures", "static")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, destination / package, ignore=ignore)
    shutil.copy(ROOT / ".importlinter", destination / ".importlinter")
    return destination


def lint_imports(cwd: Path, *contracts: str) -> subprocess.CompletedProcess:
    args = [str(LINT_IMPORTS), "--no-cache"]
    for contract in contracts:
        args += ["--contract", contract]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_every_contract_has_a_violation_that_breaks_it():
    assert set(VIOLATIONS) == contract_ids()


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    return copy_tree(tmp_path_factory.mktemp("tree"))


def test_the_tree_keeps_every_contract(tree_copy):
    result = lint_imports(tree_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(VIOLATIONS)} kept, 0 broken." in result.stdout


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_violation_added_on_purpose_breaks_the_contract(contract, tmp_path):
    tree = copy_tree(tmp_path)
    module, line = VIOLATIONS[contract]
    with (tree / module).open("a") as source:
        source.write(f"\n{line}  # noqa\n")

    result = lint_imports(tree, contract)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout and "Contracts: 0 kept, 1 broken." in result.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    if contract == "no-cycles":  # a cycle is named by its package, and its modules relatively
        importer = importer.rpartition(".")[0]
    assert importer in result.stdout


def test_no_template_reaches_into_another_app():
    assert lint_templates.violations() == []


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_template_check_names_loads_includes_and_extends_of_another_app(tmp_path):
    write(tmp_path / "apps/rubrics/templatetags/rubric_tags.py", "")
    write(tmp_path / "apps/rubrics/templates/rubrics/panel.html", "panel")
    write(tmp_path / "apps/rubrics/templates/rubrics/own.html", "{% load rubric_tags %}")
    write(tmp_path / "apps/accounts/templates/accounts/ok.html", '{% extends "base.html" %}')
    write(tmp_path / "templates/base.html", "{% load static partials %}")
    write(
        tmp_path / "apps/accounts/templates/accounts/home.html",
        "{% load static %}{% load tag from rubric_tags %}"
        '{% include "rubrics/panel.html" %}{# {% load rubric_tags %} #}',
    )
    write(tmp_path / "apps/surveys/templates/surveys/page.html", "{% extends 'rubrics/own.html' %}")

    found = lint_templates.violations(tmp_path)

    assert found == [
        "apps/accounts/templates/accounts/home.html: loads 'rubric_tags', the tags of app "
        "'rubrics'",
        "apps/accounts/templates/accounts/home.html: includes 'rubrics/panel.html', a template "
        "of app 'rubrics'",
        "apps/surveys/templates/surveys/page.html: extends 'rubrics/own.html', a template of "
        "app 'rubrics'",
    ]
