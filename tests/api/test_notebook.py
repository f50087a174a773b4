"""The notebook path of docs/api.md: its ten lines of Python (httpx and pandas), run as they
are written against a live server, with only the base URL, the key and the grading run's id
filled in, read every score of the run into a DataFrame."""

import contextlib
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from django.db.models import Avg

from apps.grading.models import ResponseScore
from tests.api.builders import token_for, world_make

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCK = re.compile(r"## From a notebook\n.*?```python\n(.*?)```", re.S)


def notebook_snippet() -> str:
    return BLOCK.search(API_PAGE.read_text()).group(1)


def test_the_snippet_is_ten_lines_of_httpx_and_pandas():
    snippet = notebook_snippet()
    assert len(snippet.rstrip("\n").split("\n")) == 10
    assert snippet.startswith("import httpx, pandas as pd\n")
    for placeholder in ("http://127.0.0.1:8000/api/v1/", "assay_YOUR_KEY", "grading_run=1&"):
        assert snippet.count(placeholder) == 1


@pytest.mark.parametrize("page_size", [10000, 3])  # one page, and several followed by `next`
def test_the_snippet_reads_a_grading_runs_scores(
    live_server, offline_provider_url, make_study, page_size
):
    world = world_make(offline_provider_url, make_study)
    key = token_for(world.researcher)
    code = (
        notebook_snippet()
        .replace("http://127.0.0.1:8000/api/v1/", f"{live_server.url}/api/v1/")
        .replace("assay_YOUR_KEY", key)
        .replace(
            "grading_run=1&page_size=10000",
            f"grading_run={world.grading_run.pk}&page_size={page_size}",
        )
    )
    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/api.md", "exec"), namespace)  # noqa: S102 - the page's own code
    scores = namespace["scores"]
    assert isinstance(scores, pd.DataFrame)
    stored = ResponseScore.objects.filter(grading_run=world.grading_run).order_by("pk")
    assert list(scores["id"]) == list(stored.values_list("pk", flat=True))
    assert list(scores["score"]) == pytest.approx(list(stored.values_list("score", flat=True)))
    models = world.sampling_run.model_configs.all()
    assert set(scores["model"]) == {model.pk for model in models}
    # The mean score of each model, printed under its name.
    lines = printed.getvalue().splitlines()
    assert lines[0] == "model_name"
    for model in models:
        mean = stored.filter(response__model=model).aggregate(mean=Avg("score"))["mean"]
        (line,) = [line for line in lines if line.startswith(f"{model.display_name} ")]
        assert float(line.removeprefix(model.display_name)) == pytest.approx(mean, abs=1e-6)
