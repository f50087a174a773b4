"""The answer viewer of a grading run: who may open it, each filter a report's cell links
with, each sort, pages of answers and the answer the URL names, what an answer shows in
full (escaped), answers a calibration grader still grades blind, and a page read in the
same number of queries however many answers it lists."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.roles import Role
from apps.grading.bands import BANDS, SCORE_BINS, THRESHOLD
from apps.grading.models import CalibrationSample, CalibrationSet, CallState, Judgment
from apps.questions.models import Topic
from tests.analysis.benchmark_builders import ERROR, FAILED, UNGRADED, Q, bench_make
from tests.conftest import ROLES
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
MIXED = [
    ("positive", "factual", 2),
    ("negative", "presentation", 3),
    ("positive", "presentation", 1),
]
ANSWERS = {
    ("Alpha", "q0"): [0.5, 0.65],
    ("Alpha", "q1"): [0.9],
    ("Alpha", "q2"): [1.0],
    ("Alpha", "q3"): [[True, True, False]],  # met the one to avoid: 2 of 6 points
    ("offline-beta", "q0"): [ERROR],
    ("offline-beta", "q1"): [FAILED],
    ("offline-beta", "q2"): [0.6, UNGRADED],
}


@pytest.fixture
def bench(db):
    questions = [
        Q("q0", topic="accounts"),
        Q("q1", topic="scams"),
        Q("q2", topic="harassment"),
        Q("q3", topic="accounts", criteria=MIXED),
    ]
    return bench_make(
        models={"Alpha": "Alpha", "offline-beta": "Beta"}, questions=questions, answers=ANSWERS
    )


@pytest.fixture
def web(client, researcher):
    client.force_login(researcher)
    return client


def url(bench) -> str:
    return reverse("grading:answers", args=[bench.grading.pk])


def page(client, bench, **params) -> str:
    response = client.get(url(bench), params)
    assert response.status_code == 200
    return response.content.decode()


def listed(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-answer-id="(\d+)"', html)]


def shown(html: str) -> int | None:
    found = re.search(r'data-testid="answer-detail" data-answer="(\d+)"', html)
    return int(found.group(1)) if found else None


def ids(bench, *keys) -> set[int]:
    return {bench.answer(*key).pk for key in keys}


@pytest.mark.parametrize("role", ROLES)
def test_only_researchers_open_the_viewer(role_client, client, bench, role):
    if role is None:
        response = client.get(url(bench))
        assert response.status_code == 302 and "/login" in response.url
        return
    response = role_client(role).get(url(bench))
    assert response.status_code == (200 if role == Role.RESEARCHER else 403)
    if role == Role.RESEARCHER:
        assert len(listed(response.content.decode())) == 9


def test_the_run_page_links_to_the_viewer(web, bench):
    html = web.get(reverse("grading:run_detail", args=[bench.grading.pk])).content.decode()
    assert f'href="{url(bench)}" data-testid="answers-link"' in html


def test_every_answer_is_listed_the_first_shown_and_unscored_ones_say_why(web, bench):
    html = page(web, bench)
    assert len(listed(html)) == 9
    assert shown(html) == listed(html)[0]
    assert "9 answers." in html
    assert "no score: an error" in html and "no score: not answered" in html
    assert "no score yet" in html


def test_filter_by_model(web, bench):
    beta = bench.models["offline-beta"]
    html = page(web, bench, model=beta.pk)
    assert set(listed(html)) == {r.pk for k, r in bench.responses.items() if k[0] == "offline-beta"}
    assert "4 answers match these filters." in html
    assert "offline demo model</span>" in html  # the list and the answer shown say so


@pytest.mark.parametrize("by", ["slug", "pk"])
def test_filter_by_topic_by_slug_or_id(web, bench, by):
    scams = Topic.objects.get(slug="scams")
    html = page(web, bench, topic=getattr(scams, by))
    assert set(listed(html)) == ids(bench, ("Alpha", "q1", 0), ("offline-beta", "q1", 0))
    assert '<option value="scams" selected>' in html


@pytest.mark.parametrize(
    ("band", "expected"),
    [
        ("below-65", [("Alpha", "q0", 0), ("Alpha", "q3", 0), ("offline-beta", "q2", 0)]),
        ("65-or-more", [("Alpha", "q0", 1), ("Alpha", "q1", 0), ("Alpha", "q2", 0)]),
        (
            "unscored",
            [("offline-beta", "q0", 0), ("offline-beta", "q1", 0), ("offline-beta", "q2", 1)],
        ),
        ("0.60-0.65", [("offline-beta", "q2", 0)]),  # a bin holds its lower edge
        ("0.65-0.70", [("Alpha", "q0", 1)]),  # 0.65 is not below 65%
        ("0.95-1.00", [("Alpha", "q2", 0)]),  # the last bin holds both edges
    ],
)
def test_filter_by_score_band(web, bench, band, expected):
    assert set(listed(page(web, bench, band=band))) == ids(bench, *expected)


def test_the_bands_are_the_reports(bench):
    assert THRESHOLD == 0.65
    assert [i / 20 for i in range(21)] == SCORE_BINS
    assert BANDS["below-65"].holds(0.6499) and not BANDS["below-65"].holds(13 / 20)
    assert BANDS["65-or-more"].holds(13 / 20) and BANDS["unscored"].holds(None)


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        # q0's first answer has 10 of 20 met; every answer graded has a criterion met but
        # the full marks one (1.0) has none not met.
        (
            "met",
            [
                ("Alpha", "q0", 0),
                ("Alpha", "q0", 1),
                ("Alpha", "q1", 0),
                ("Alpha", "q2", 0),
                ("Alpha", "q3", 0),
                ("offline-beta", "q0", 0),
                ("offline-beta", "q2", 0),
            ],
        ),
        (
            "not_met",
            [
                ("Alpha", "q0", 0),
                ("Alpha", "q0", 1),
                ("Alpha", "q1", 0),
                ("Alpha", "q3", 0),
                ("offline-beta", "q2", 0),
            ],
        ),
        ("error", [("offline-beta", "q0", 0)]),
    ],
)
def test_filter_by_verdict(web, bench, verdict, expected):
    html = page(web, bench, verdict=verdict)
    assert set(listed(html)) == ids(bench, *expected)
    # The criteria judged so are marked in the answer shown.
    marked = re.findall(r'\bmatched" data-testid="criterion" data-verdict="(\w+)"', html)
    assert marked and set(marked) == {verdict}


def test_filter_by_criterion_and_verdict_names_the_criterion(web, bench):
    avoid = bench.rubrics["q3"].criteria.get(polarity="negative")
    html = page(web, bench, criterion=avoid.pk, verdict="met")
    assert listed(html) == [bench.answer("Alpha", "q3").pk]
    assert "judged on one criterion of q3" in html and avoid.text in html
    assert listed(page(web, bench, criterion=avoid.pk, verdict="not_met")) == []
    # Each criterion links to the answers judged as it is.
    first = bench.rubrics["q0"].criteria.order_by("order").first()
    html = page(web, bench, answer=bench.answer("Alpha", "q0").pk)
    assert f"?criterion={first.pk}&amp;verdict=met" in html


def test_filter_by_kind_polarity_and_question(web, bench):
    q3 = {bench.answer("Alpha", "q3").pk}
    assert set(listed(page(web, bench, polarity="negative"))) == q3
    assert set(listed(page(web, bench, kind="presentation", verdict="met"))) == q3
    assert listed(page(web, bench, kind="presentation", verdict="error")) == []
    html = page(web, bench, question=bench.questions["q0"].pk)
    assert set(listed(html)) == ids(
        bench, ("Alpha", "q0", 0), ("Alpha", "q0", 1), ("offline-beta", "q0", 0)
    )
    assert "to question q0" in html


def test_values_that_do_not_parse_are_left_out(web, bench):
    odd = [
        {"model": "²"},
        {"topic": "nowhere"},
        {"topic": "9" * 31},
        {"band": "x"},
        {"verdict": "maybe"},
        {"sort": "x"},
        {"answer": "9" * 31},
        {"criterion": "\x00"},
    ]
    for params in odd:
        assert len(listed(page(web, bench, **params))) == 9, params


def test_sorting(web, bench):
    def score_order(reverse):
        scored = [(k, v) for k, v in _scores(bench).items() if v is not None]
        ordered = sorted(scored, key=lambda kv: kv[1], reverse=reverse)
        return [k for k, _v in ordered]

    unscored = ids(
        bench, ("offline-beta", "q0", 0), ("offline-beta", "q1", 0), ("offline-beta", "q2", 1)
    )
    rising = listed(page(web, bench, sort="score"))
    assert rising[:6] == [bench.answer(*k).pk for k in score_order(False)]
    assert set(rising[6:]) == unscored  # no score: last either way
    falling = listed(page(web, bench, sort="-score"))
    assert falling[:6] == [bench.answer(*k).pk for k in score_order(True)]
    assert set(falling[6:]) == unscored
    by_model = listed(page(web, bench, sort="model"))
    assert set(by_model[:5]) == {r.pk for k, r in bench.responses.items() if k[0] == "Alpha"}
    by_topic = listed(page(web, bench, sort="topic"))  # accounts, then scams, then harassment
    topics = [bench.responses[k].question.topic.slug for k in _keys(bench, by_topic)]
    assert topics == ["accounts"] * 4 + ["scams"] * 2 + ["harassment"] * 3
    by_question = listed(page(web, bench))
    questions = [k[1] for k in _keys(bench, by_question)]
    assert questions == sorted(questions)


def _scores(bench) -> dict:
    from apps.grading.models import ResponseScore

    found = dict(
        ResponseScore.objects.filter(grading_run=bench.grading).values_list("response_id", "score")
    )
    return {k: found.get(r.pk) for k, r in bench.responses.items()}


def _keys(bench, pks):
    by_pk = {r.pk: k for k, r in bench.responses.items()}
    return [by_pk[pk] for pk in pks]


def test_the_url_names_the_answer_shown_with_its_neighbours(web, bench):
    order = listed(page(web, bench, sort="score"))
    middle = order[4]
    html = page(web, bench, sort="score", answer=middle)
    assert shown(html) == middle
    assert "Answer 5 of 9" in html
    assert f'href="?sort=score&amp;answer={order[3]}"' in html and "data-answer-previous" in html
    assert f'href="?sort=score&amp;answer={order[5]}"' in html and "data-answer-next" in html
    assert 'aria-current="true"' in html
    first = page(web, bench, sort="score", answer=order[0])
    assert "data-answer-previous" not in first and "data-answer-next" in first


def test_an_answer_outside_the_filters_is_not_shown(web, bench):
    alpha = bench.models["Alpha"]
    beta_answer = bench.answer("offline-beta", "q0").pk
    html = page(web, bench, model=alpha.pk, answer=beta_answer)
    assert shown(html) == listed(html)[0] != beta_answer
    assert "The answer asked for is not among them: the first is shown." in html


def test_an_answer_in_full(web, bench):
    answer = bench.answer("Alpha", "q3")
    html = page(web, bench, answer=answer.pk)
    assert "Score <strong>33.3%</strong>: 2 of 6 points" in html
    assert "Below 65%" in html and answer.question.text in html
    verdicts = re.findall(r'data-verdict="(\w+)"', html)
    assert verdicts == ["met", "met", "not_met"]
    # The positive met earns its 2; the negative met (done, though it should not be) and the
    # positive presentation not met earn nothing.
    assert re.findall(r"earns (\d) of (\d)", html) == [("2", "2"), ("0", "3"), ("0", "1")]
    assert "Should avoid" in html and "Presentation" in html
    assert html.count("Judged met.") == 2 and "Judged not met." in html

    errored = page(web, bench, answer=bench.answer("offline-beta", "q0").pk)
    assert "No score: a judgment is an error: retry it" in errored
    assert "The grader&#x27;s answer was bad." in errored
    failed = page(web, bench, answer=bench.answer("offline-beta", "q1").pk)
    assert "The sampling run failed to answer" in failed


def test_answer_and_explanation_text_are_escaped(web, bench):
    answer = bench.answer("Alpha", "q1")
    answer.text = "<script>alert('answer')</script>\n  - keep *this*"
    answer.save(update_fields=["text"])
    Judgment.objects.filter(grading_run=bench.grading, response=answer).update(
        explanation="<script>alert('why')</script>"
    )
    html = page(web, bench, answer=answer.pk)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;answer&#x27;)&lt;/script&gt;\n  - keep *this*" in html
    assert "&lt;script&gt;alert(&#x27;why&#x27;)&lt;/script&gt;" in html


def test_pages_of_answers_follow_the_answer_shown(web, db):
    questions = [Q(f"p{i:02}", criteria=[("positive", "factual", 1)] * 2) for i in range(30)]
    answers = {(m, q.key): [0.5] for m in ("Alpha", "Beta") for q in questions}
    big = bench_make(models={"Alpha": "A", "Beta": "B"}, questions=questions, answers=answers)
    first = page(web, big)
    assert len(listed(first)) == 50 and "Page 1 of 2" in first
    second = page(web, big, page=2)
    assert len(listed(second)) == 10 and shown(second) == listed(second)[0]
    assert "Answer 51 of 60" in second
    # The last of page 1 names the first of page 2 as its next, and that answer's URL lands
    # on page 2.
    last = listed(first)[-1]
    html = page(web, big, answer=last)
    assert f'answer={listed(second)[0]}"' in html and "Page 1 of 2" in html
    assert "Page 2 of 2" in page(web, big, answer=listed(second)[0])


def test_a_page_is_read_in_the_same_queries_whatever_it_lists(web, db):
    questions = [Q(f"n{i:02}", criteria=[("positive", "factual", 1)] * 2) for i in range(30)]
    answers = {(m, q.key): [0.5] for m in ("Alpha", "Beta") for q in questions}
    answers[("Alpha", "n00")] = [1.0]
    big = bench_make(models={"Alpha": "A", "Beta": "B"}, questions=questions, answers=answers)
    counted = {}
    for label, params in (
        ("fifty", {}),
        ("one", {"band": "65-or-more", "model": big.models["Alpha"].pk}),
        ("named", {"answer": big.answer("Beta", "n29").pk, "verdict": "met"}),
    ):
        with CaptureQueriesContext(connection) as queries:
            html = page(web, big, **params)
        assert shown(html)
        counted[label] = len(queries)
        listed_ = len(listed(html))
        assert listed_ == {"fifty": 50, "one": 1}.get(label, listed_)
    assert counted["fifty"] == counted["one"]
    assert max(counted.values()) <= 16, counted


def test_htmx_gets_the_viewer_alone_and_a_history_restore_the_page(web, bench):
    response = web.get(url(bench), **HX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="answer-viewer"') and "<html" not in html
    assert "HX-Request" in response["Vary"]
    # A filter's form sends every field, empty or not: the history keeps the viewer's own
    # query, naming the answer shown.
    sent = {"model": "", "topic": "", "band": "", "verdict": "error", "sort": "question"}
    answered = web.get(url(bench), sent, **HX)
    errored = bench.answer("offline-beta", "q0").pk
    assert answered["HX-Push-Url"] == f"{url(bench)}?verdict=error&answer={errored}"
    assert web.get(url(bench), {"verdict": "met", "band": "x"}, **HX)["HX-Push-Url"] == (
        f"{url(bench)}?verdict=met&answer={bench.answer('Alpha', 'q0').pk}"
    )
    assert web.get(url(bench), {"model": "0"}, **HX)["HX-Push-Url"] == url(bench) + (
        f"?answer={bench.answer('Alpha', 'q0').pk}"
    )
    restored = web.get(url(bench), HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX)
    assert "<html" in restored.content.decode()


def test_answers_a_calibration_grader_grades_blind_are_left_out(web, bench, researcher):
    blind = bench.answer("Alpha", "q1")
    calibration_set = CalibrationSet.objects.create(
        name="Blind", sampling_run=bench.sampling, second_grader=researcher
    )
    CalibrationSample.objects.create(
        calibration_set=calibration_set,
        question=blind.question,
        response=blind,
        rubric=bench.rubrics["q1"],
    )
    html = page(web, bench)
    assert blind.pk not in listed(html) and len(listed(html)) == 8
    assert 'data-testid="answers-withheld"' in html
    assert shown(page(web, bench, answer=blind.pk)) != blind.pk
    other = user_with_role(Role.RESEARCHER)
    web.force_login(other)
    assert blind.pk in listed(page(web, bench))


def test_an_errored_judgment_is_never_counted_as_not_met(web, bench):
    errored = bench.answer("offline-beta", "q0")
    assert Judgment.objects.filter(response=errored, status=CallState.ERROR).count() == 1
    html = page(web, bench, answer=errored.pk)
    assert re.findall(r'data-verdict="(\w+)"', html).count("error") == 1
    assert errored.pk not in listed(page(web, bench, verdict="not_met"))
