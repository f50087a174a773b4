"""How a report names a model: short, with the offline mark once.

A model served by Assay's offline provider is shown by its name without the words that only
say it is offline ("Offline Terse (demo)" reads "Terse"), and one mark says that it is: in a
page's table, a badge; in a CSV, a figure or any other text, " (offline)" after the name.
Everywhere else in Assay the model keeps its full display name (apps/llm/models.py).

A `ModelName` is the text (a str, so that tables sort, join and write it as text) that
also knows the name without its mark and whether it is offline: the page's table puts the
badge where the text has the mark. Two models whose short names would be the same keep their
display names.
"""

import re

OFFLINE_MARK = " (offline)"
# Said once under a figure whose labels carry the mark.
OFFLINE_NOTE = "(offline): an offline demo model, served by Assay's offline provider"
# The words of an offline model's display name that only say it is offline.
_OFFLINE_WORDS = re.compile(r"^\s*offline\s+|\s*\((?:offline\s+)?demo(?:\s+model)?\)\s*$", re.I)


class ModelName(str):
    """A model's name as a report shows it; `str(name)` has the offline mark."""

    name: str
    offline: bool

    def __new__(cls, name: str, *, offline: bool):
        self = super().__new__(cls, name + (OFFLINE_MARK if offline else ""))
        self.name, self.offline = name, offline
        return self

    def __reduce__(self):
        # Reports are kept in the cache: unpickled, a name is a ModelName again.
        return (_model_name, (self.name, self.offline))


def _model_name(name: str, offline: bool) -> ModelName:
    return ModelName(name, offline=offline)


def short_name(display_name: str, *, offline: bool) -> str:
    """An offline model's display name without "Offline ..." and "... (demo)"; any other's
    as it is."""
    if not offline:
        return display_name
    return _OFFLINE_WORDS.sub("", display_name).strip() or display_name


def model_names(models: list[tuple[str, bool]]) -> list[ModelName]:
    """Each (display name, offline) as a report names it; where two short names would be the
    same text, both keep their display names."""
    short = [short_name(name, offline=offline) for name, offline in models]
    marks = [OFFLINE_MARK if offline else "" for _name, offline in models]
    texts = [s + mark for s, mark in zip(short, marks, strict=True)]
    names = []
    for s, text, (display, offline) in zip(short, texts, models, strict=True):
        clash = texts.count(text) > 1
        names.append(ModelName(display if clash else s, offline=offline))
    return names
