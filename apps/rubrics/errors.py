class RubricError(Exception):
    """A rubric change that cannot be made; the message (and `field_errors`) say why."""

    def __init__(self, message: str, *, field_errors: dict[str, str] | None = None):
        super().__init__(message)
        self.field_errors = field_errors or {}


class RubricForbidden(RubricError):
    """The user may not make this change (not the question's assigned author, not an expert...);
    views answer 403. The message says who may."""


class RubricConflict(RubricError):
    """The draft changed since the editor loaded it: the save was refused, nothing overwritten.

    `changes` are the events (newest last) that happened after the revision the editor had;
    `current_revision` is the draft's revision now.
    """

    def __init__(self, message: str, *, changes: list, current_revision: int):
        super().__init__(message)
        self.changes = changes
        self.current_revision = current_revision


class ScoringError(RubricError, ValueError):
    """The inputs cannot be scored (a missing verdict, points outside the set, ...)."""


class ImportRefused(RubricError):
    """A rubric file that cannot be imported; `problems` names every reason and where it is
    (line or JSON path, and field). Nothing was stored."""

    def __init__(self, filename: str, problems: list[str]):
        shown = problems[:20]
        more = f"; and {len(problems) - len(shown)} more problem(s)" if len(problems) > 20 else ""
        super().__init__(
            f"{filename} was not imported (nothing was changed): " + "; ".join(shown) + more
        )
        self.filename = filename
        self.problems = problems
