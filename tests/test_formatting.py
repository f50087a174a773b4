"""The formatter formats: `ruff format` lays out the code (`make lint` checks it), and a
statement opts out with `# fmt: skip` only where its layout carries meaning, which a comment
above it says ("... hence fmt: skip"), one such comment for each opt-out."""

import subprocess
from pathlib import Path

from tests.conftest import ROOT


def unexplained(paths: list[Path]) -> list[str]:
    """`file:line` of each `# fmt: skip` beyond the comments that say why."""
    found = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        skips = [n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# fmt: skip")]
        reasons = sum("hence fmt: skip" in line for line in lines if line.lstrip().startswith("#"))
        found += [f"{path}:{n}" for n in skips[reasons:]]
    return found


def test_every_fmt_skip_has_a_comment_saying_why():
    names = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert unexplained([ROOT / n for n in names if (ROOT / n).exists()]) == []


def test_a_fmt_skip_with_no_reason_is_found(tmp_path):
    table = tmp_path / "table.py"
    table.write_text(
        "# A table, one entry a line: hence fmt: skip.\nA = (1,\n     2)  # fmt: skip\n"
        "B = (3,\n     4)  # fmt: skip\n"
    )
    assert unexplained([table]) == [f"{table}:5"]
