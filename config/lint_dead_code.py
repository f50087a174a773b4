"""Dead code (`make lint`): a function, method, class or property that nothing in the
product refers to.

    python -m config.lint_dead_code      # prints each; exits 1 if there is any

vulture finds definitions whose name nothing uses, reading `[tool.vulture]` in pyproject.toml
(the packages it reads, and the names and decorators that Django, DRF, Celery and the other
frameworks call without our code naming them). This adds the uses that vulture cannot see:

- names in templates (`{{ run.eta_text }}`, `{% json_block step %}`, `|steps`);
- dotted paths in strings (settings: "apps.accounts.views.locked_out");
- a name given as a string in a keyword argument (`BooleanFilter(method="needs_filter")`)
  or in a list or tuple of a class body (an admin's `list_display`, `actions`);
- `get_<field>` of a DRF `SerializerMethodField` named `<field>`.

Only definitions are reported, not variables or attributes: those are mostly fields and
settings that Django reads by name. Tests are not read, so a function that only tests call is
reported too: a test should go through the code that the product runs.
"""

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

from vulture import Vulture

ROOT = Path(__file__).resolve().parent.parent
REPORTED = frozenset({"function", "method", "class", "property"})

TEMPLATE_TAG = re.compile(r"{{.*?}}|{%.*?%}", re.S)
WORD = re.compile(r"[A-Za-z_]\w*")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
TEMPLATE_SUFFIXES = frozenset({".html", ".txt", ".xml", ".md"})


def _settings(root: Path) -> dict:
    with (root / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["tool"]["vulture"]


def _template_names(root: Path) -> Iterator[str]:
    folders = [root / "templates", *sorted((root / "apps").glob("*/templates"))]
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix in TEMPLATE_SUFFIXES:
                for tag in TEMPLATE_TAG.findall(path.read_text(encoding="utf-8")):
                    yield from WORD.findall(tag)


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Reader(Vulture):
    """vulture, counting the names that strings give as uses too."""

    def visit(self, node: ast.AST) -> None:
        if _is_text(node) and DOTTED.fullmatch(node.value):
            self.used_names.update(node.value.split("."))
        elif isinstance(node, ast.keyword) and _is_text(node.value):
            if node.value.value.isidentifier():
                self.used_names.add(node.value.value)
        elif isinstance(node, ast.ClassDef):
            self.used_names.update(_class_body_names(node))
        super().visit(node)


def _class_body_names(cls: ast.ClassDef) -> Iterator[str]:
    for statement in cls.body:
        if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
            continue
        value = statement.value
        if isinstance(value, ast.List | ast.Tuple):
            yield from (e.value for e in value.elts if _is_text(e) and e.value.isidentifier())
        elif isinstance(value, ast.Call) and getattr(value.func, "attr", None) == (
            "SerializerMethodField"
        ):
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            yield from (f"get_{t.id}" for t in targets if isinstance(t, ast.Name))


def _python_files(root: Path, paths: Iterable[str], exclude: Iterable[str]) -> list[Path]:
    """The files under `paths` that no pattern of `exclude` matches, as vulture matches them
    (a pattern with no wildcard matches any path containing it)."""
    patterns = [p if any(c in p for c in "*?[") else f"*{p}*" for p in exclude]
    files = []
    for name in paths:
        path = root / name
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if not any(fnmatch(file.as_posix(), pattern) for pattern in patterns):
                files.append(file)
    return files


def dead_code(root: Path = ROOT) -> list[str]:
    """One line for each definition that nothing refers to (path:line: what)."""
    settings = _settings(root)
    files = _python_files(root, settings["paths"], settings.get("exclude", []))
    vulture = _Reader(
        ignore_names=settings.get("ignore_names", []),
        ignore_decorators=settings.get("ignore_decorators", []),
    )
    vulture.scavenge(files)
    vulture.used_names.update(_template_names(root))
    unused = vulture.get_unused_code(min_confidence=settings.get("min_confidence", 0))
    return [
        f"{Path(item.filename).relative_to(root)}:{item.first_lineno}: {item.message}"
        for item in unused
        if item.typ in REPORTED
    ]


def main() -> int:
    found = dead_code()
    for line in found:
        print(line)
    if found:
        print(
            f"{len(found)} definition(s) that nothing refers to: remove them, or, when a "
            "framework calls them by name, say so in [tool.vulture] in pyproject.toml.",
            file=sys.stderr,
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
