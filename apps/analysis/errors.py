"""The analysis app's one domain error, with a message a researcher can read."""


class AnalysisError(ValueError):
    """A report was asked for something it cannot show (a model pair of models that are not
    in the run, a model compared with itself)."""
