"""The repository carries everything its code and tests read: no path climbs out of the
checkout (`ROOT.parent / "shared"`, one `.parent` too many from `__file__`, a `".."`), so
that a clone with nothing beside it runs the demo and passes the tests. This reads the
Python files, as a lint would; it does not run them."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("apps", "config", "workers", "offline_llm", "benchmarks", "tests")
ROOT_SETTING = "BASE_DIR"  # settings.BASE_DIR: the checkout


def _up(node: ast.AST) -> tuple[ast.AST, int]:
    """(the expression a chain of .parent / .parents[n] / .resolve() starts from, how many
    directories it climbs)."""
    up = 0
    while True:
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            up, node = up + 1, node.value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            up, node = up + node.slice.value + 1, node.value.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("resolve", "absolute")
        ):
            node = node.func.value
        else:
            return node, up


def _depth(node: ast.AST, *, file_depth: int, roots: set[str]) -> int | None:
    """How deep below the checkout `node` is (negative: outside it); None if not a path
    this can place."""
    base, up = _up(node)
    if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "Path" and base.args:
        (argument,) = base.args[:1]
        if isinstance(argument, ast.Name) and argument.id == "__file__":
            return file_depth + 1 - up  # .parent is the module's own folder
        inner = _depth(argument, file_depth=file_depth, roots=roots)
        return None if inner is None else inner - up
    if isinstance(base, ast.Name) and base.id == "__file__":
        return None  # os.path on __file__ is not used here
    if (isinstance(base, ast.Name) and base.id in roots) or (
        isinstance(base, ast.Attribute) and base.attr == ROOT_SETTING
    ):
        return -up
    return None


def _climbs_out(text: str, *, file_depth: int) -> list[int]:
    """Line numbers where `text`, a module `file_depth` folders below the checkout, names a
    directory above it or joins a ".." onto a path."""
    tree = ast.parse(text)
    roots = {ROOT_SETTING}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and (
                _depth(node.value, file_depth=file_depth, roots=roots) == 0
            ):
                roots.add(target.id)
    found = set()
    for node in ast.walk(tree):
        climbing = (isinstance(node, ast.Attribute) and node.attr == "parent") or (
            isinstance(node, ast.Subscript) and getattr(node.value, "attr", None) == "parents"
        )
        if climbing:
            depth = _depth(node, file_depth=file_depth, roots=roots)
            if depth is not None and depth < 0:
                found.add(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            text = node.right.value if isinstance(node.right, ast.Constant) else None
            if isinstance(text, str) and ".." in Path(text).parts:
                found.add(node.lineno)
    return sorted(found)


def _modules() -> list[Path]:
    modules = [ROOT / "manage.py"]
    for folder in FOLDERS:
        modules += sorted((ROOT / folder).rglob("*.py"))
    return modules


def test_no_code_or_test_reads_a_path_outside_the_repository():
    found = []
    for module in _modules():
        relative = module.relative_to(ROOT)
        for line in _climbs_out(module.read_text(), file_depth=len(relative.parts) - 1):
            found.append(f"{relative}:{line}")
    assert found == []


def test_a_path_that_climbs_out_is_found():
    climbs = """
from pathlib import Path
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parents[0]
SHARED = ROOT.parent / "shared"
ABOVE = Path(__file__).resolve().parents[2] / "fixtures"
BESIDE = HERE / ".." / ".." / "shared"
DEMO = Path(settings.BASE_DIR).parent / "data"
"""
    # A module in tests/: its parent is tests/, parent.parent (parents[1]) the checkout.
    assert _climbs_out(climbs, file_depth=1) == [7, 8, 9, 10]
    stays = """
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POSTS = ROOT / "apps/demo/data/candidate-posts-300.csv"
NAME = Path(__file__).parent.parent.name
"""
    # A module in tests/<folder>/.
    assert _climbs_out(stays, file_depth=2) == []
