"""Dead code is found by a machine (`make lint`): config/lint_dead_code.py, vulture with the
uses it cannot see (templates, dotted paths in settings, names given as strings). The product
has none; a function that nothing refers to, added on purpose to a copy of the tree, is
reported, and so is one that only a test calls."""

import re
import shutil
import tomllib

from config.lint_dead_code import ROOT, dead_code

COPIED = ("apps", "config", "workers", "offline_llm", "benchmarks", "templates")

ADDED = """
def nobody_calls_this():
    return 1


def only_a_template_shows_this():
    return 2


def only_a_test_calls_this():
    return 3


class NobodyMakesThis:
    @property
    def nobody_reads_this(self):
        return 4
"""


def test_the_product_has_no_dead_code():
    assert dead_code() == []


def test_a_definition_nothing_refers_to_is_reported_even_when_a_test_calls_it(tmp_path):
    ignore = shutil.ignore_patterns("__pycache__", "fixtures", "static", "data")
    for name in COPIED:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=ignore)
    for name in ("pyproject.toml", "manage.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "apps/console/added.py").write_text(ADDED)
    (tmp_path / "templates/added.html").write_text("{{ thing.only_a_template_shows_this }}")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_added.py").write_text(
        "from apps.console.added import only_a_test_calls_this\n\n\n"
        "def test_it():\n    assert only_a_test_calls_this() == 3\n"
    )

    found = [line for line in dead_code(tmp_path) if line.startswith("apps/console/added.py:")]

    assert [re.sub(r":\d+:", ":", line) for line in found] == [
        "apps/console/added.py: unused function 'nobody_calls_this'",
        "apps/console/added.py: unused function 'only_a_test_calls_this'",
        "apps/console/added.py: unused class 'NobodyMakesThis'",
        "apps/console/added.py: unused property 'nobody_reads_this'",
    ]


def test_every_name_the_configuration_excuses_is_still_defined():
    """A name excused in [tool.vulture] (no wildcard) whose definition is gone is a stale
    excuse, which would hide the next definition of that name."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["vulture"]
    names = [n for n in settings["ignore_names"] if not any(c in n for c in "*?[")]
    sources = "\n".join(
        path.read_text()
        for folder in settings["paths"]
        for path in ([ROOT / folder] if folder.endswith(".py") else (ROOT / folder).rglob("*.py"))
    )
    defined = set(re.findall(r"^\s*(?:def|class) (\w+)", sources, re.M))
    missing = [name for name in names if name not in defined]
    assert missing == []
