"""What every web and worker process imports at start (`django.setup()`, the URLconf, the
Celery app with every task module) loads none of the scientific packages: they are imported
where a statistic, a figure or a model call is computed. With them, a process holds some
120 MB more before it serves anything, and the console's CSV export of a million rows has
200 MB in all.

Each check runs in a fresh interpreter under `-X importtime`, whose log says, for every
module imported, which module imported it: a failure names the chain of our modules that
brought the package in."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "pandas", "scipy", "sklearn", "matplotlib", "krippendorff", "litellm")

START = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
import config.urls
from config.celery import app
app.loader.import_default_modules()
{extra}
print(json.dumps({{
    "tasks": [m for m in app.conf.imports if m in sys.modules],
    "loaded": [m for m in {heavy!r} if m in sys.modules],
}}))
"""

# "import time: <self us> | <cumulative us> | <two spaces a level><module>", each module's line
# after those of the modules it imported.
LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| ( *)(\S+)$")


def chains(log: str) -> dict[str, list[str]]:
    """For each heavy package imported, the modules through which it was first imported,
    the importer first: ["apps.analysis.benchmark", "apps.analysis.api", "config.urls"]."""
    entries = [(len(m.group(1)) // 2, m.group(2)) for m in map(LINE.match, log.splitlines()) if m]
    found = {}
    for i, (depth, name) in enumerate(entries):
        if name not in HEAVY or name in found:
            continue
        importers = []
        for outer, importer in entries[i + 1 :]:
            if outer < depth:
                importers.append(importer)
                depth = outer
        found[name] = importers
    return found


def start_up(extra: str = "") -> tuple[dict, dict[str, list[str]]]:
    script = START.format(extra=extra, heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script],
        cwd=ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1]), chains(result.stderr)


def test_web_and_worker_processes_start_without_the_scientific_packages():
    from config.celery import app

    state, found = start_up()

    assert state["tasks"] == list(app.conf.imports)  # every task module was imported
    culprits = "\n".join(f"{name} <- {' <- '.join(chain)}" for name, chain in found.items())
    assert not found, f"imported at start, by (importer first):\n{culprits}"
    assert state["loaded"] == [], state["loaded"]


def test_the_check_names_the_module_that_imports_a_package():
    state, found = start_up(extra="import apps.analysis.survey")

    assert "pandas" in state["loaded"]
    assert found["pandas"][0] == "apps.analysis.survey"
    assert found["scipy"][:2] == ["stats.correlation", "apps.analysis.survey"]
