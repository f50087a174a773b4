MAX_PROBLEMS = 20


class QuestionError(Exception):
    """A change to the question bank that cannot be made, said so a person can read it."""


class FormatError(QuestionError):
    """The file cannot be used; `problems` lists every reason, each naming where it is."""

    def __init__(self, filename: str, problems: list[str]):
        self.filename = filename
        self.problems = problems
        shown = problems[:MAX_PROBLEMS]
        more = len(problems) - len(shown)
        text = f"{filename} was not imported (nothing was changed): " + "; ".join(shown)
        if more:
            text += f"; and {more} more problem(s)"
        super().__init__(text)
