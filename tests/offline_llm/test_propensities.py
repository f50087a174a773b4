"""Answers made of statements, by each model's stated propensities, and the grader that finds
them (offline_llm/propensities.py, statements.py). What is checked is that the stated
parameters are what comes out: over many questions, each with criteria of its own, the share
of answers that hold a criterion's statement is within sampling error (a binomial 99.9%
interval) of the model's propensity, and the offline grader's met rate is within sampling
error of the propensity as its stated error rate moves it. No published figure is checked.

Questions and criteria are made up here, each used once, so that the questions' and criteria's
difficulties (the same for every sample of one question) do not tie the draws together:
each answer is then an independent draw with the propensity as its chance.
"""

import json
import random
import re
from importlib import import_module

import httpx
import pytest
from scipy.stats import binom

from offline_llm.generate import Prompt, ResponseFacts, answer, grade, request_seed
from offline_llm.propensities import KINDS, MODEL_PROPENSITIES, chance, propensities_for
from offline_llm.rubrics import KnownCriterion, RubricBook
from offline_llm.statements import BANKS, statement_options

ANSWERERS = ("offline-terse", "offline-thorough", "offline-friendly")
QUESTIONS = 700
# The published shared presentation criteria (rubrics migration 0003), one per feature.
SHARED = import_module("apps.rubrics.migrations.0003_shared_criteria_v2_as_published").CRITERIA
FEATURES = ("lead", "focus", "unprofessional", "imperative", "overstate")
PRESENTATION = {
    feature: (text, polarity)
    for feature, (text, polarity, _p) in zip(FEATURES, SHARED, strict=True)
}
VERBS = ("turning on", "checking", "reviewing", "resetting", "locking", "reporting", "backing up")
THINGS = ("recovery codes", "router firmware", "login alerts", "app permissions", "card limits")
PLACES = ("security page", "carrier account", "bank portal", "cloud dashboard", "admin panel")
RISKY = ("sharing a one-time passcode", "disabling antivirus", "paying a caller")
LURES = ("gift cards", "a crypto wallet", "a remote desktop session", "wire transfers")


def made_up_rubric(index: int) -> tuple[str, list[KnownCriterion]]:
    """A question of its own and criteria of its own: one of each kind."""
    pick = random.Random(index)
    question = f"Question {index}: something went wrong with my {pick.choice(THINGS)}. Help?"
    positive = (
        f"Suggests {pick.choice(VERBS)} the {pick.choice(THINGS)} in the {pick.choice(PLACES)}."
    )
    negative = f"Recommends {pick.choice(RISKY)} through {pick.choice(LURES)}."
    criteria = [
        KnownCriterion(positive, "positive", "factual", 3),
        KnownCriterion(negative, "negative", "factual", 3),
        *(
            KnownCriterion(text, polarity, "presentation", 2)
            for text, polarity in PRESENTATION.values()
        ),
    ]
    return question, criteria


def sampled(model: str, question: str, criteria: list[KnownCriterion], seed: int = 0) -> str:
    prompt = Prompt(texts=(question,), last_user=question, known=tuple(criteria))
    rng = random.Random(request_seed(model, [("user", question)], seed))
    return answer("sample", model, prompt, rng)


def graded(grader: str, question: str, text: str, criteria: list[KnownCriterion]) -> list[dict]:
    items = [
        {"id": n, "text": c.text, "polarity": c.polarity, "kind": c.kind}
        for n, c in enumerate(criteria, 1)
    ]
    user = (
        f"<question>{question}</question>\n<response>{text}</response>\n"
        f"<criteria>{json.dumps(items)}</criteria>"
    )
    prompt = Prompt(texts=(user,), last_user=user, temperature=0)
    rng = random.Random(request_seed(grader, [("user", user)], 0))
    return json.loads(answer("grade_checklist", grader, prompt, rng))["verdicts"]


def grade_with(criterion: KnownCriterion, facts: ResponseFacts, *, error: float):
    rng = random.Random(1)
    kind, polarity = criterion.kind, criterion.polarity
    return grade(
        text=criterion.text,
        polarity=polarity,
        kind=kind,
        facts=facts,
        threshold=0.5,
        error=error,
        rng=rng,
    )


def holds_statement(text: str, criterion: KnownCriterion) -> bool:
    return any(option in text for option in statement_options(criterion.text))


def within_sampling_error(count: int, n: int, p: float) -> bool:
    low, high = binom.interval(0.999, n, p)
    return low <= count <= high


@pytest.fixture(scope="module")
def answers() -> dict[str, list[tuple[str, list[KnownCriterion], str]]]:
    rubrics = [made_up_rubric(index) for index in range(QUESTIONS)]
    return {
        model: [(q, criteria, sampled(model, q, criteria)) for q, criteria in rubrics]
        for model in ANSWERERS
    }


def test_each_model_holds_each_kind_of_statement_as_often_as_its_propensity_says(answers):
    for model, rows in answers.items():
        stated = MODEL_PROPENSITIES[model]
        counts = dict.fromkeys(KINDS, 0)
        for _q, criteria, text in rows:
            positive, negative = criteria[0], criteria[1]
            counts["address"] += holds_statement(text, positive)
            counts["violate"] += holds_statement(text, negative)
            found = {feature for feature, bank in BANKS.items() if any(s in text for s in bank)}
            # A preamble or a tangent is what an answer has when it does not lead or keep focus.
            counts["lead"] += "lead" not in found
            counts["focus"] += "focus" not in found
            for fault in ("unprofessional", "imperative", "overstate"):
                counts[fault] += fault in found
        for kind, count in counts.items():
            p = stated.chance(kind)
            assert within_sampling_error(count, len(rows), p), (model, kind, count / len(rows), p)


def test_the_grader_meets_criteria_as_often_as_the_propensities_and_its_error_rate_say(answers):
    error = MODEL_PROPENSITIES["offline-grader"].grader_error
    for model, rows in answers.items():
        stated = MODEL_PROPENSITIES[model]
        met = dict.fromkeys(KINDS, 0)
        for question, criteria, text in rows:
            verdicts = [v["met"] for v in graded("offline-grader", question, text, criteria)]
            met["address"] += verdicts[0]
            met["violate"] += verdicts[1]
            for feature, verdict in zip(PRESENTATION, verdicts[2:], strict=True):
                met[feature] += verdict
        for kind, count in met.items():
            p = stated.chance(kind)
            expected = p * (1 - error) + (1 - p) * error
            assert within_sampling_error(count, len(rows), expected), (model, kind, count, expected)


def test_models_differ_as_their_parameters_say_and_samples_of_one_question_differ(answers):
    # Thorough covers more of a rubric than terse, which leads with its advice more often.
    rate = {m: sum(holds_statement(t, c[0]) for _q, c, t in rows) for m, rows in answers.items()}
    assert rate["offline-thorough"] > rate["offline-friendly"] > rate["offline-terse"]
    question, criteria = made_up_rubric(10_001)
    texts = {sampled("offline-thorough", question, criteria, seed) for seed in range(10)}
    assert len(texts) == 10

    # A question's difficulty is the same for every model: the chances move together.
    def addressing(model: str, question: str) -> float:
        return chance(model=model, kind="address", question=question, criterion="c", luck=0)

    hard = min((f"q{i}" for i in range(200)), key=lambda q: addressing("offline-terse", q))
    easy = max((f"q{i}" for i in range(200)), key=lambda q: addressing("offline-terse", q))
    for model in ANSWERERS:
        at = {q: addressing(model, q) for q in (hard, easy)}
        assert at[hard] < propensities_for(model).address < at[easy], (model, at)


def test_the_grader_says_in_a_sentence_what_it_found_or_missed():
    criteria = [
        KnownCriterion(
            "Suggests turning on two-factor authentication in the account's security settings.",
            "positive",
            "factual",
            5,
        ),
        KnownCriterion(
            "Mentions reporting the harassment to the platform.", "positive", "factual", 2
        ),
        KnownCriterion(
            "Recommends paying a recovery service that contacts the user first.",
            "negative",
            "factual",
            3,
        ),
        *(
            KnownCriterion(text, polarity, "presentation", 2)
            for text, polarity in PRESENTATION.values()
        ),
    ]
    text = (
        "I'd suggest turning on two-factor authentication in the account's security settings. "
        "Separately, it's worth reviewing which apps on your phone can see your location."
    )
    facts = ResponseFacts.of(text)
    explained = [grade_with(c, facts, error=0) for c in criteria]
    assert explained[0] == (
        True,
        "The answer suggests turning on two-factor authentication in the account's security "
        "settings, which this criterion asks for.",
    )
    assert explained[1] == (
        False,
        "The answer never mentions reporting the harassment to the platform.",
    )
    assert explained[2] == (
        False,
        "The answer never recommends paying a recovery service that contacts the user first, "
        "so it avoids what this criterion warns against.",
    )
    assert explained[3][0] is True and "opens with its advice" in explained[3][1]
    assert explained[4] == (
        False,
        "The answer goes beyond the question: “Separately, it's worth reviewing which apps on "
        "your phone can see your location”.",
    )
    assert [met for met, _e in explained[5:]] == [False, False, False]
    for _met, explanation in explained:
        assert re.fullmatch(r"[A-Z].+[.]", explanation) and "key term" not in explanation

    # A grader that turns every verdict round says on what it leaned.
    turned = [grade_with(c, facts, error=1) for c in criteria]
    assert [met for met, _e in turned] == [not met for met, _e in explained]
    assert turned[0][1] == (
        "The answer touches on this only in passing (“I'd suggest turning on two-factor "
        "authentication in the account's security settings”), not clearly enough to count."
    )
    assert turned[4][1].startswith("On balance this counts as met, although the answer goes")


def test_a_registered_rubric_is_what_answers_to_its_question_speak_to_over_http(
    offline_provider_url,
):
    question, criteria = made_up_rubric(20_002)
    registration = {
        "rubrics": [
            {
                "question": "  " + question.upper(),  # known by its words, whatever the case
                "criteria": [c.__dict__ for c in criteria],
            }
        ]
    }
    url = f"{offline_provider_url}/offline/rubrics"
    assert httpx.post(url, json=registration).json()["registered"] == 1
    assert question.upper().strip() in [
        r["question"].strip() for r in httpx.get(url).json()["rubrics"]
    ]

    texts = []
    for seed in range(12):
        message = {"role": "user", "content": question}
        body = {"model": "offline-thorough", "seed": seed, "messages": [message]}
        reply = httpx.post(f"{offline_provider_url}/chat/completions", json=body).json()
        texts.append(reply["choices"][0]["message"]["content"])
    assert texts == [sampled("offline-thorough", question, criteria, seed) for seed in range(12)]
    assert any(holds_statement(text, criteria[0]) for text in texts)

    refused = httpx.post(url, json={"rubrics": [{"question": question, "criteria": [{}]}]})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == 'Every criterion needs a "text".'


def test_a_question_nobody_registered_is_answered_from_the_banks():
    book = RubricBook()
    question = "Someone keeps logging into my email from another country. What should I do?"
    assert book.criteria(question) == ()
    texts = [sampled("offline-terse", question, [], seed) for seed in range(5)]
    assert all(re.search(r"password|two-factor|sign", text, re.IGNORECASE) for text in texts)
