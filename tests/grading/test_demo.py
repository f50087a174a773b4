"""The model-run demo that `make run` loads: a finished sampling run, a grading run and a
calibration, made through the engine against the offline provider over real HTTP; the grading
run records what made its answers, grades and expert grades, and its report says so."""

from collections import defaultdict

import httpx
import pytest
from django.urls import reverse
from django.utils.html import escape

from apps.accounts.roles import Role
from apps.accounts.services import user_set_roles
from apps.demo import runs as demo
from apps.demo.rubrics import demo_rubrics_load
from apps.grading.models import (
    Calibration,
    CalibrationSet,
    ExpertJudgment,
    GradingRun,
    Judgment,
    ResponseScore,
)
from apps.llm.models import ModelConfig, RunStatus
from apps.rubrics.models import Rubric, RubricState
from offline_llm import propensities
from offline_llm.statements import statement_options
from tests.factories import api_base, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_world(settings, offline_provider_url):
    settings.OFFLINE_LLM_URL = api_base(offline_provider_url)
    roles = {
        "expert": [Role.EXPERT],
        "expert2": [Role.EXPERT],
        "reviewer": [Role.EXPERT, Role.REVIEWER],
        "researcher": [Role.RESEARCHER],
    }
    for username, role_list in roles.items():
        user = user_with_role(role_list[0], username=username)
        user_set_roles(user=user, roles=role_list)
    for display_name in [*demo.ANSWERERS, demo.GRADER]:
        served_as = "offline-" + display_name.split()[1].lower()
        ModelConfig.objects.create(
            display_name=display_name,
            family="Offline demo",
            litellm_model=f"openai/{served_as}",
            api_base=settings.OFFLINE_LLM_URL,
            max_concurrent=16,
            input_price_per_mtok=0,
            output_price_per_mtok=0,
        )
    demo_rubrics_load()


def test_the_demo_has_a_finished_sampling_run_a_grading_run_and_a_calibration(demo_world):
    summary, run, grading = demo.demo_runs_load()
    approved = Rubric.objects.filter(state=RubricState.APPROVED).count()
    answers = approved * len(demo.ANSWERERS) * 5
    assert run.status == RunStatus.FINISHED and grading.status == RunStatus.FINISHED
    assert run.responses.filter(status="done").count() == answers
    assert len(set(run.responses.values_list("text", flat=True))) > answers // 2  # samples differ
    assert ResponseScore.objects.filter(grading_run=grading).count() == answers
    calibration_set = CalibrationSet.objects.get(name=demo.CALIBRATION_SET)
    assert "simulated" in calibration_set.name
    assert calibration_set.samples.count() == approved
    labels = ExpertJudgment.objects.filter(sample__calibration_set=calibration_set)
    assert labels.exists() and not labels.filter(final_met__isnull=True).exists()
    assert Calibration.objects.filter(calibration_set=calibration_set, grading_run=grading).exists()
    assert summary.startswith(f"{answers} answers sampled")
    assert summary.endswith("its provenance recorded")

    assert demo.demo_runs_load()[0] == "already loaded"
    assert run.responses.count() == answers


def test_the_grading_run_records_what_made_it_and_its_report_says_so(
    demo_world, offline_provider_url, role_client
):
    _summary, run, grading = demo.demo_runs_load()

    parts = {part["what"]: part for part in grading.simulation["parts"]}
    assert list(parts) == ["Answers", "Grades", "Expert grades"]
    # Every parameter as the offline provider itself reports it, for the models the demo used.
    shown = [*demo.ANSWERERS, demo.GRADER, *demo.SIMULATED_EXPERTS.values()]
    names = {
        m.display_name: m.litellm_model.rsplit("/", 1)[-1]
        for m in ModelConfig.objects.filter(display_name__in=shown)
    }
    assert len(names) == len(shown)
    served = httpx.get(
        f"{offline_provider_url}/offline/parameters",
        params=[("model", name) for name in names.values()],
    ).json()
    model = {m["id"]: m for m in served["models"]}

    def expected(shown, field):
        about = served["model_fields"][field]
        return {"name": f"{shown}: {field}", "value": model[names[shown]][field], "about": about}

    assert parts["Answers"]["parameters"] == [
        *served["answering"],
        *(
            expected(shown, field)
            for shown in sorted(demo.ANSWERERS)
            for field in ("style", *propensities.KINDS)
        ),
    ]
    assert parts["Grades"]["parameters"] == [
        *served["grading"],
        expected(demo.GRADER, "grading_threshold"),
        expected(demo.GRADER, "grader_error"),
    ]
    assert parts["Expert grades"]["parameters"] == [
        expected(shown, field)
        for shown in demo.SIMULATED_EXPERTS.values()
        for field in ("grading_threshold", "grader_error")
    ]
    assert "No expert graded." in parts["Expert grades"]["how"]

    client = role_client(Role.RESEARCHER)
    html = client.get(reverse("analysis:benchmark_report", args=[grading.pk])).text
    start = html.index('data-testid="demo-notice"')
    notice = html[start : html.index("</section>", start)]
    assert "by construction of these parameters: it is not a finding" in notice
    for part in parts.values():
        assert escape(part["how"]) in notice
        for parameter in part["parameters"]:
            value = f'<td class="num">{parameter["value"]}</td>'
            assert f"<code>{parameter['name']}</code></th>{value}" in notice, parameter

    # Loaded again over a run an older demo left without a record: the record is made.
    GradingRun.objects.filter(pk=grading.pk).update(simulation={})
    summary, _run, again = demo.demo_runs_load()
    assert summary == "already loaded; its provenance recorded"
    again.refresh_from_db()
    assert again.simulation == grading.simulation
    assert run.responses.count() == _run.responses.count()


def test_the_demo_tells_the_provider_its_rubrics_and_answers_speak_to_them(
    demo_world, offline_provider_url
):
    """The models are asked the question alone; the demo registers each question's rubric
    with the provider, so answers address, miss or violate its criteria, and the grader says
    in a sentence what it found. Rates are checked against the stated parameters in
    tests/offline_llm/test_propensities.py; here, that the demo's data is made that way."""
    _summary, _run, grading = demo.demo_runs_load()
    registered = httpx.get(f"{offline_provider_url}/offline/rubrics").json()["rubrics"]
    questions = {r["question"]: r["criteria"] for r in registered}
    for rubric in Rubric.objects.filter(state=RubricState.APPROVED).select_related("question"):
        texts = [c["text"] for c in questions[rubric.question.text]]
        assert texts == list(rubric.criteria.values_list("text", flat=True))

    judgments = Judgment.objects.filter(grading_run=grading).select_related("criterion")
    by_kind = defaultdict(list)
    for judgment in judgments:
        criterion = judgment.criterion
        by_kind[(criterion.polarity, criterion.kind)].append(judgment)
        assert judgment.explanation.startswith(("The answer", "On balance", "Nothing", "Read as"))
        assert "key term" not in judgment.explanation
    met = {kind: sum(j.met for j in rows) / len(rows) for kind, rows in by_kind.items()}
    # Not all and not nothing: each kind as the models' propensities make it.
    assert all(0.02 < rate < 0.98 for rate in met.values()), met
    addressed = [
        j
        for j in by_kind[("positive", "factual")]
        if j.met and j.explanation.endswith("which this criterion asks for.")
    ]
    # What it found is, but for a sentence near enough to another criterion's now and then,
    # the criterion's own statement, in the answer.
    stated = [
        any(option in j.response.text for option in statement_options(j.criterion.text))
        for j in addressed
    ]
    assert addressed and sum(stated) >= 0.8 * len(stated), (sum(stated), len(stated))


def test_without_the_offline_provider_the_demo_says_so_and_leaves_the_runs_out(
    demo_world, settings
):
    settings.OFFLINE_LLM_URL = "http://127.0.0.1:9/v1"
    summary, run, grading = demo.demo_runs_load()
    assert summary.startswith("skipped (no offline provider answers at http://127.0.0.1:9/v1")
    assert run is None and grading is None
