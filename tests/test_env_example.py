""".env.example lists every variable that Assay reads, and nothing it does not read."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READ_BY_SETTINGS = re.compile(r"""\benv(?:_bool|_int|_list)?\(\s*["']([A-Z][A-Z0-9_]*)["']""")
LISTED = re.compile(r"^([A-Z][A-Z0-9_]*)=", re.M)
# Read outside settings: by `make run`'s stack and by the test suite.
OTHER_READERS = ("config/stack.py", "tests/conftest.py")


def listed() -> set[str]:
    return set(LISTED.findall((ROOT / ".env.example").read_text()))


def test_every_variable_settings_reads_is_in_env_example():
    read = set(READ_BY_SETTINGS.findall((ROOT / "config" / "settings.py").read_text()))
    assert read, "the pattern found no env() call in settings.py"
    assert sorted(read - listed()) == []


def test_every_variable_in_env_example_is_read_somewhere():
    sources = [(ROOT / "config" / "settings.py").read_text()]
    sources += [(ROOT / path).read_text() for path in OTHER_READERS]
    text = "\n".join(sources)
    unread = {name for name in listed() if f'"{name}"' not in text and f"'{name}'" not in text}
    assert sorted(unread) == []
