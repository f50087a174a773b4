"""The template half of the layering check (`make lint`): import-linter sees Python imports,
not `{% load %}`, `{% include %}` or `{% extends %}`, which tie one app's templates to
another's just as an import would.

    python -m config.lint_templates      # prints each violation; exits 1 if there is any

A template under apps/<app>/templates/ may load the tag libraries and include or extend the
templates of its own app and of the platform (accounts, console, the project's templates/),
and anything Django or a third-party package provides; a template under templates/ (the
base layout) only the platform's and third parties'. Another domain app's panel reaches the
home page through `apps.accounts.home`, never through a template naming it.

It also refuses, in any template, what the Content-Security-Policy (config/settings.py)
refuses on a page: an inline script or style element, a style attribute, an event handler
attribute, hx-on, a javascript: URL. (Template comments may name them.)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = frozenset({"accounts", "console"})
PROJECT = "(project templates)"

LOAD = re.compile(r"{%\s*load\s+(.+?)\s*%}")
REFERENCE = re.compile(r"""{%\s*(?:include|extends)\s+(["'])([^"']+)\1""")
COMMENT = re.compile(r"{#.*?#}|{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S)
REFUSED_BY_THE_POLICY = {
    "an inline script": re.compile(r"<script(?![^>]*\bsrc\s*=)[^>]*>", re.I),
    "an inline style element": re.compile(r"<style\b", re.I),
    "a style attribute": re.compile(r"\sstyle\s*=", re.I),
    "an hx-on attribute": re.compile(r"\s(data-)?hx-on", re.I),
    "an event handler attribute": re.compile(r"\son[a-z]+\s*=", re.I),
    "a javascript: URL": re.compile(r"javascript:", re.I),
}


def _template_dirs(root: Path) -> dict[str, Path]:
    """owner -> templates directory: each app's, and the project's."""
    dirs = {p.parent.name: p for p in sorted((root / "apps").glob("*/templates")) if p.is_dir()}
    if (root / "templates").is_dir():
        dirs[PROJECT] = root / "templates"
    return dirs


def _tag_libraries(root: Path) -> dict[str, str]:
    """tag library name -> the app that defines it."""
    return {
        module.stem: module.parent.parent.name
        for module in sorted((root / "apps").glob("*/templatetags/*.py"))
        if module.stem != "__init__"
    }


def _libraries_loaded(argument: str) -> list[str]:
    words = argument.split()
    if "from" in words:  # {% load tag1 tag2 from library %}
        return words[words.index("from") + 1 :]
    return words


def violations(root: Path = ROOT) -> list[str]:
    dirs = _template_dirs(root)
    libraries = _tag_libraries(root)
    found = []
    for owner, directory in dirs.items():
        allowed = PLATFORM | {owner, PROJECT}
        for path in sorted(directory.rglob("*.html")):
            text = COMMENT.sub("", path.read_text(encoding="utf-8"))
            where = path.relative_to(root)
            for match in LOAD.finditer(text):
                for library in _libraries_loaded(match.group(1)):
                    app = libraries.get(library)
                    if app is not None and app not in allowed:
                        found.append(f"{where}: loads {library!r}, the tags of app {app!r}")
            for match in REFERENCE.finditer(text):
                name = match.group(2).partition("#")[0]
                providers = [o for o, d in dirs.items() if (d / name).is_file()]
                if providers and not set(providers) & allowed:
                    verb = "extends" if "extends" in match.group(0) else "includes"
                    found.append(f"{where}: {verb} {name!r}, a template of app {providers[0]!r}")
    return found


def _uncommented(text: str) -> str:
    """`text` less its template comments, on the same lines."""
    return COMMENT.sub(lambda match: "\n" * match.group(0).count("\n"), text)


def refused_by_the_policy(root: Path = ROOT) -> list[str]:
    found = []
    for directory in _template_dirs(root).values():
        for path in sorted(directory.rglob("*.html")):
            text = _uncommented(path.read_text(encoding="utf-8"))
            where = sorted(
                (match.start(), name)
                for name, pattern in REFUSED_BY_THE_POLICY.items()
                for match in pattern.finditer(text)
            )
            for start, name in where:
                line = text.count("\n", 0, start) + 1
                found.append(f"{path.relative_to(root)}:{line}: {name}")
    return found


def main() -> int:
    found = violations()
    refused = refused_by_the_policy()
    for line in [*found, *refused]:
        print(line)
    if found:
        print(f"{len(found)} template(s) reach into another app; see config/lint_templates.py.")
    if refused:
        print(
            f"{len(refused)} thing(s) in templates that the Content-Security-Policy refuses: "
            "move styles to static/css and scripts to static/js."
        )
    return 1 if found or refused else 0


if __name__ == "__main__":
    sys.exit(main())
