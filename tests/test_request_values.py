"""Every HTML page, sent what no form offers: each field any page reads, set at once to a NUL,
a superscript two (which str.isdigit() admits and int() refuses), thirty-one digits (past
every integer column) or 20,000 characters (past every text limit). A page refuses or ignores
it, by everyone who may open it, with and without HTMX: never a 5xx, and nothing people
write on a form is added or changed.

Each app's own tests (tests/<app>/test_request_values.py) hold what each page says."""

import pytest
from django.apps import apps
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.http import urlencode

from apps.grading.models import ExpertJudgment
from apps.grading.services.calibration import calibration_create
from apps.questions.models import QuotaSettings
from apps.rubrics import services as rubric_services
from apps.surveys.models import Assignment, Participant
from tests.factories import (
    assign,
    draft_with_criteria,
    exclusion_reasons_seeded,
    question_make,
    sampled_make,
)
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    graded,
    grader_model,
    set_make,
    world_fixture,
)
from tests.surveys.flow import consent

pytestmark = pytest.mark.django_db
# Every name a page of ours reads from a query or a form (grep request.GET, request.POST and
# the forms' fields); a page ignores those it does not read.
FIELDS = [
    "action",
    "after",
    "age",
    "answers_per_stratum",
    "answer",
    "author",
    "back",
    "band",
    "body",
    "budget_usd",
    "category",
    "code",
    "compare",
    "confirm_rescale",
    "confirmed",
    "consent_text",
    "conditions",
    "conversation",
    "criterion",
    "days",
    "decision",
    "default_reviewer",
    "default_topic",
    "dir",
    "direction",
    "edited",
    "education",
    "error_kind",
    "example_text",
    "exclude",
    "explanation",
    "explanation_H1",
    "explanation_H2",
    "final",
    "format",
    "gender",
    "grader",
    "grading_run",
    "guidance",
    "include",
    "income",
    "instructions_text",
    "kind",
    "label_status",
    "length_bucket",
    "message",
    "met",
    "minimum_per_stratum",
    "mode",
    "model",
    "models",
    "name",
    "note",
    "notes",
    "open",
    "page",
    "pairs_per_model_pair",
    "pair",
    "params",
    "participant",
    "period",
    "points",
    "points_mapping",
    "polarity",
    "prior_attempt",
    "prompt",
    "PROLIFIC_PID",
    "q",
    "ratings_per_unit",
    "question",
    "reason",
    "resolve",
    "response",
    "revision",
    "reviewer",
    "rubric",
    "runs",
    "sampling_run",
    "scope",
    "second_grader",
    "seed",
    "SESSION_ID",
    "sensemaking",
    "show",
    "shown",
    "size",
    "sort",
    "state",
    "status",
    "step",
    "STUDY_ID",
    "table1",
    "target_per_topic",
    "temperature",
    "text",
    "topic",
    "units_per_participant",
    "value",
    "value_H1",
    "value_H2",
    "verdict",
    "with",
]
VALUES = {"NUL": "\x00", "superscript two": "²", "31 digits": "9" * 31, "20,000": "x" * 20_000}
SKIPPED = {"login", "logout", "password_change"}  # signing out would end the sweep
APPS = ("questions", "rubrics", "runs", "grading", "surveys", "llm", "analysis", "accounts")


def named_patterns(resolver=None, prefix=""):
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace not in ("admin", "api"):
                inner = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
                yield from named_patterns(pattern, inner)
        elif isinstance(pattern, URLPattern) and pattern.name and pattern.name not in SKIPPED:
            yield f"{prefix}{pattern.name}", pattern.pattern.converters


@pytest.fixture
def site(world, offline_provider_url, make_study):
    """A calibration world (graded, with a set and its calibration), posts to screen, a
    draft and a rubric in review, and a study with a participant mid-way."""
    run = graded(world.run, grader_model(offline_provider_url))
    calibration_create(calibration_set=set_make(world), grading_run=run, user=world.researcher)
    exclusion_reasons_seeded()
    sampled_make(2)
    for _ in range(2):
        question = question_make()
        assign(question, author=world.author, reviewer=world.reviewer)
        rubric = draft_with_criteria(question, world.author)
    rubric_services.rubric_submit_for_review(rubric=rubric, user=world.author)
    world.study = make_study(count=5)
    return world


def clients(site) -> dict[str, Client]:
    people = {who: getattr(site, who) for who in ("researcher", "author", "second", "reviewer")}
    signed_in = {}
    for who, user in people.items():
        signed_in[who] = Client(raise_request_exception=False)
        signed_in[who].force_login(user)
    signed_in["participant"] = Client(raise_request_exception=False)
    consent(signed_in["participant"], site.study)
    return signed_in


def ids() -> list[int]:
    """The newest ids of every table of ours: the rows a URL's id may name."""
    found = set()
    for model in apps.get_models():
        if model._meta.app_label in APPS and model._meta.pk.get_internal_type() != "UUIDField":
            found.update(model.objects.order_by("-pk").values_list("pk", flat=True)[:3])
    return sorted(pk for pk in found if isinstance(pk, int))


def targets(site, people: dict[str, Client]) -> list[tuple[str, str]]:
    """(url, who) for every page, with ids that the person may open (not 403, not 404)."""
    assignment = Assignment.objects.filter(participant__study=site.study).order_by("pk").first()
    found = []
    for name, converters in named_patterns():
        if "slug" in converters:
            values = {"slug": site.study.slug, "assignment_id": assignment.pk, "code": "H2"}
            found.append((reverse(name, kwargs={k: values[k] for k in converters}), "participant"))
            continue
        if not converters:
            found += [(reverse(name), who) for who in people if who != "participant"]
            continue
        for pk in ids():
            kwargs = {
                k: (pk if c.__class__.__name__ == "IntConverter" else "pause")
                for k, c in converters.items()
            }
            url = reverse(name, kwargs=kwargs)
            opened = [
                (url, who)
                for who, client in people.items()
                if who != "participant" and client.get(url).status_code not in (403, 404)
            ]
            if opened:
                found += opened[:2]
                break
    return found


# The tables of what people write or make on a form. (Some pages act without a field: a
# POST to start a rubric makes one, and an API token may be named "²"; those are not here.)
WRITTEN = (
    "questions.ScreeningDecision",
    "questions.QuestionLabel",
    "questions.Sample",
    "questions.QuotaSettings",
    "rubrics.ReviewComment",
    "rubrics.SharedCriterionSet",
    "rubrics.RubricImport",
    "runs.SamplingRun",
    "grading.GradingRun",
    "grading.CalibrationSet",
    "grading.Calibration",
    "surveys.Study",
    "surveys.Answer",
    "surveys.ProxyRun",
)


def written() -> dict[str, object]:
    """How many rows each table people write holds, and the text written on existing rows."""
    counts = {label: apps.get_model(label).objects.count() for label in WRITTEN}
    counts["grading notes"] = sorted(
        ExpertJudgment.objects.values_list("first_note", "second_note", "resolution_note")
    )
    counts["rejections"] = sorted(
        Participant.objects.values_list("rejection_category", "rejection_message")
    )
    counts["quotas"] = list(
        QuotaSettings.objects.values_list("target_per_topic", "minimum_per_stratum")
    )
    return counts


def test_no_page_answers_an_odd_value_with_an_error_or_stores_it(site):
    people = clients(site)
    pages = targets(site, people)
    assert len(pages) > 100, "the sweep found too few pages to be a sweep"
    before = written()
    failed = []
    for label, value in VALUES.items():
        # Encoded once, as the client would encode them for every request: each request is
        # the same, byte for byte, as `client.get(url, data)` and `client.post(url, data)`.
        data = dict.fromkeys(FIELDS, value)
        query = {"QUERY_STRING": urlencode(data, doseq=True)}
        form = encode_multipart(BOUNDARY, data)
        # An equal string, not the MULTIPART_CONTENT object, which the client would encode
        # again.
        form_type = f"multipart/form-data; boundary={BOUNDARY}"
        assert form_type == MULTIPART_CONTENT
        for url, who in pages:
            client = people[who]
            for method in ("get", "post"):
                for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
                    if method == "get":
                        response = client.get(url, **query, **headers)
                    else:
                        response = client.post(url, form, content_type=form_type, **headers)
                    if response.status_code >= 500:
                        failed.append(
                            (label, method, url, who, bool(headers), response.status_code)
                        )
    assert failed == []
    assert written() == before
