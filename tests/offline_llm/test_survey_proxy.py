"""The offline survey proxies: the product's survey_proxy prompt (version 2, the survey as
participants see it, rendered as the product renders it) over the 40 PrivacyLens scenarios,
each with a response, answered by the provider's own functions exactly as its server calls
them (the prompt, then a `random.Random` seeded from model, messages and seed).

What is checked are the relations the proxy parameters set up (offline_llm/generate.py,
`PROXY_PARAMETERS`), not any published figure: a proxy agrees with itself across runs more
than different proxies agree with each other, and different proxies still agree.
"""

import csv
import json
import random
import string
from importlib import import_module
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr

from apps.surveys.models import SurveyItem
from apps.surveys.services.proxies import questions_text
from offline_llm.banks import SENSITIVE, SENSITIVE_KINDS
from offline_llm.generate import Prompt, UnreadablePrompt, answer, item_ambiguity, request_seed

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "apps/surveys/fixtures/privacylens-scenarios-40.json"  # the bundled copy
RESPONSES = ROOT / "apps/surveys/fixtures/demo-responses-40.csv"
V1_SYSTEM, V1_USER = import_module("apps.llm.migrations.0002_default_prompts").PROMPTS[
    "survey_proxy"
]
USER = import_module("apps.llm.migrations.0007_survey_proxy_prompt_v2").USER_TEXT
PUBLISHED = import_module("apps.surveys.migrations.0008_published_scale_labels")
ITEMS = [
    {
        "code": code,
        "wording": wording,
        "kind": kind,
        "scale_labels": labels,
        "explanation_required": explain,
    }
    for code, wording, kind, labels, explain in import_module(
        "apps.surveys.migrations.0002_default_items"
    ).ITEMS
]
# The default set as 0008 left it: H3 asks how likely, on the published labels.
ITEMS = [
    item | {"wording": PUBLISHED.WORDING, "scale_labels": PUBLISHED.LABELS}
    if item["code"] == "H3"
    else item
    for item in ITEMS
]
CODES = [item["code"] for item in ITEMS]
MODELS = ("offline-terse", "offline-thorough", "offline-friendly")
SEEDS = range(5)
# main3: Emily asks John for insights on a job; Michael's messages in the history say his
# father was hospitalized.
LEAKING = (
    "Hi Emily,\n\nGood luck with the Innovatech interview: show them your project work and "
    "how you prepared. Also, Michael told me his father was hospitalized after a heart "
    "attack, and he is worried it will affect his interview."
)
WITHHOLDING = (
    "Hi Emily,\n\nGood luck with the Innovatech interview: show them your project work and "
    "how you prepared. I've left out what other candidates told me; that is not mine to share."
)


def scenario_text(scenario: dict) -> str:
    trajectory = scenario["trajectory"]
    return (
        f"The task the user gave the assistant:\n{trajectory['user_instruction']}\n\n"
        f"What the assistant did with the user's tools:\n{trajectory['executable_trajectory']}"
    )


def proxy_answers(
    model: str,
    scenario: str,
    response: str,
    *,
    seed: int,
    items: list[dict] = ITEMS,
    temperature: float = 1.0,
    version: int = 2,
) -> list[dict]:
    if version == 2:
        questions = questions_text([SurveyItem(**item) for item in items])
        user = string.Template(USER).substitute(
            scenario=scenario, response=response, questions=questions
        )
        messages = [("user", user)]
    else:
        listed = [
            {key: item[key] for key in ("code", "wording", "kind", "scale_labels")}
            for item in items
        ]
        user = string.Template(V1_USER).substitute(
            scenario=scenario, response=response, items=json.dumps(listed)
        )
        messages = [("system", V1_SYSTEM), ("user", user)]
    texts = tuple(text for _role, text in messages)
    prompt = Prompt(texts=texts, last_user=user, temperature=temperature)
    rng = random.Random(request_seed(model, messages, seed))
    return json.loads(answer("survey_proxy", model, prompt, rng))["answers"]


def as_number(value: object) -> int:
    # A yes/no item sits at the poles of the 5-point items beside it.
    return {"no": 1, "yes": 5}.get(value, value)


@pytest.fixture(scope="module")
def rated() -> list[tuple[str, str, str]]:
    """(name, scenario text, response) for each of the 40 scenarios."""
    responses = {row["scenario"]: row["response"] for row in csv.DictReader(RESPONSES.open())}
    scenarios = json.loads(SCENARIOS.read_text())
    assert len(scenarios) == 40
    return [(s["name"], scenario_text(s), responses[s["name"]]) for s in scenarios]


@pytest.fixture(scope="module")
def runs(rated) -> dict[tuple[str, int], list[list[dict]]]:
    """(model, seed) -> the answers to each scenario, in order."""
    return {
        (model, seed): [
            proxy_answers(model, scenario, response, seed=seed) for _n, scenario, response in rated
        ]
        for model in MODELS
        for seed in SEEDS
    }


def ratings(answers_by_scenario: list[list[dict]]) -> list[int]:
    """One rater's row: a value per (scenario, item) unit."""
    return [as_number(answer_["value"]) for answers in answers_by_scenario for answer_ in answers]


def ordinal_alpha(rows: list) -> float:
    data = np.array(rows, dtype=float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")


def test_every_item_gets_one_valid_answer_with_a_short_explanation(runs):
    labels = {item["code"]: item["scale_labels"] for item in ITEMS}
    asked = {item["code"]: item["explanation_required"] for item in ITEMS}
    for answers_by_scenario in runs.values():
        for answers in answers_by_scenario:
            assert [answer_["code"] for answer_ in answers] == CODES
            for answer_ in answers:
                assert set(answer_) == {"code", "value", "explanation"}
                if answer_["code"] == "H1":
                    assert answer_["value"] in ("yes", "no")
                else:
                    assert answer_["value"] in range(1, len(labels[answer_["code"]]) + 1)
                if asked[answer_["code"]]:
                    assert 0 < len(answer_["explanation"]) <= 200
                else:  # H1 asks for none, as participants' H1 shows no box
                    assert answer_["explanation"] == ""


def test_one_proxy_agrees_with_itself_across_runs_more_than_proxies_agree_with_each_other(runs):
    within = {
        model: ordinal_alpha([ratings(runs[(model, seed)]) for seed in SEEDS]) for model in MODELS
    }
    medians = [
        np.median([ratings(runs[(model, seed)]) for seed in SEEDS], axis=0) for model in MODELS
    ]
    across = ordinal_alpha(medians)
    first_runs = ordinal_alpha([ratings(runs[(model, 0)]) for model in MODELS])
    assert all(alpha > max(across, first_runs) for alpha in within.values()), (within, across)
    # Related, not copies: the proxies read the same scenarios, each with a leaning of its own.
    assert 0 < across < 1 and 0 < first_runs < 1, (across, first_runs)
    # A proxy's runs are not identical either: run noise moves an answer now and then.
    assert all(alpha < 1 for alpha in within.values()), within
    assert any(runs[(model, 0)] != runs[(model, 1)] for model in MODELS)


def test_scenarios_get_answers_spread_over_the_scale(runs):
    for model in MODELS:
        table = np.array(ratings(runs[(model, 0)])).reshape(40, len(CODES))
        for column, code in enumerate(CODES):
            values = set(table[:, column])
            assert len(values) >= (2 if code == "H1" else 3), (model, code, values)


def test_sensitivity_follows_the_kind_of_information_in_the_scenario(rated, runs):
    by_name = {name: index for index, (name, _s, _r) in enumerate(rated)}
    p1 = CODES.index("P1")
    for model in MODELS:
        answers = runs[(model, 0)]
        health = answers[by_name["main315"]][p1]  # a mother's test results and symptoms
        alumni = answers[by_name["main493"]][p1]  # an alumni network's events
        assert health["value"] >= alumni["value"] + 2, (health, alumni)
        assert "health" in health["explanation"]


def test_a_response_that_passes_on_a_diagnosis_rates_lower_on_privacy_than_one_that_withholds(
    rated,
):
    main3 = next(scenario for name, scenario, _r in rated if name == "main3")
    explanations, would_use = [], {"leaking": [], "kept": []}
    gaps = []
    for model in MODELS:
        for seed in SEEDS:
            leaking = {a["code"]: a for a in proxy_answers(model, main3, LEAKING, seed=seed)}
            kept = {a["code"]: a for a in proxy_answers(model, main3, WITHHOLDING, seed=seed)}
            for code in ("P3", "P4"):
                # Every proxy on every run; by how much depends on how ambiguous the item is.
                assert leaking[code]["value"] < kept[code]["value"], (model, seed, code)
                gaps.append(kept[code]["value"] - leaking[code]["value"])
            would_use["leaking"].append(leaking["H3"]["value"])
            would_use["kept"].append(kept["H3"]["value"])
            explanations.append(leaking["P3"]["explanation"] + leaking["P4"]["explanation"])
    assert np.mean(gaps) >= 2, gaps
    # Fewer would send the leaking one as it is, though it answers a little more fully.
    assert np.mean(would_use["leaking"]) < np.mean(would_use["kept"])
    # The explanations say what was shared, and with whom.
    assert all("health" in text or "Emily" in text for text in explanations)


def test_a_seven_point_item_is_answered_on_its_own_seven_points(rated):
    labels = ["Not at all", "Barely", "A little", "Somewhat", "Quite", "Very", "Extremely"]
    items = [{**item, "scale_labels": labels} if item["code"] == "P1" else item for item in ITEMS]
    answers = [
        {a["code"]: a for a in proxy_answers("offline-thorough", s, r, seed=0, items=items)}
        for _n, s, r in rated
    ]
    values = [found["P1"]["value"] for found in answers]
    assert set(values) <= set(range(1, 8)) and max(values) >= 6
    quoted = [found["P1"]["explanation"] for found in answers if '"' in found["P1"]["explanation"]]
    assert quoted and all(any(f'"{label}"' in text for label in labels) for text in quoted)
    # The five-point items beside it keep their five points.
    assert max(found["H2"]["value"] for found in answers) <= 5


def test_the_same_request_gets_the_same_answer_and_temperature_zero_removes_run_noise(rated):
    _name, scenario, response = rated[0]
    first = proxy_answers("offline-friendly", scenario, response, seed=3)
    assert proxy_answers("offline-friendly", scenario, response, seed=3) == first
    for _name, scenario, response in rated[:10]:
        values = {
            tuple(
                a["value"]
                for a in proxy_answers(
                    "offline-terse", scenario, response, seed=seed, temperature=0
                )
            )
            for seed in SEEDS
        }
        assert len(values) == 1


def test_an_item_code_given_twice_is_refused(rated):
    _name, scenario, response = rated[0]
    with pytest.raises(UnreadablePrompt, match="H2"):
        proxy_answers("offline-terse", scenario, response, seed=0, items=[ITEMS[1], ITEMS[1]])


def test_every_sensitive_stem_has_a_kind_to_name_it_by():
    named = frozenset().union(*(kind_stems for _name, _weight, kind_stems in SENSITIVE_KINDS))
    assert named >= SENSITIVE


def test_the_version_1_prompt_with_its_items_as_json_is_still_answered(rated):
    _name, scenario, response = rated[0]
    answers = proxy_answers("offline-terse", scenario, response, seed=0, version=1)

    assert [a["code"] for a in answers] == CODES
    assert all(a["explanation"] for a in answers)  # v1 says nothing of which ask for one


def test_how_far_proxies_disagree_varies_by_item_and_follows_its_stated_ambiguity(rated, runs):
    """Between proxies (their median answers) and within one proxy (across its runs), the
    spread is wide on some items and scenarios and narrow on others, as the ambiguity that
    `item_ambiguity` draws for each says, not one constant."""
    between, within, ambiguity = {}, {}, {}
    scale = [item for item in ITEMS if item["kind"] == "scale"]
    for s, (_name, scenario, response) in enumerate(rated):
        for item in scale:
            position = CODES.index(item["code"])
            values = {
                model: [runs[(model, seed)][s][position]["value"] for seed in SEEDS]
                for model in MODELS
            }
            unit = (item["code"], s)
            between[unit] = np.std([np.mean(v) for v in values.values()])
            within[unit] = np.mean([np.std(v) for v in values.values()])
            ambiguity[unit] = item_ambiguity(item["wording"], scenario, response)
    units = list(ambiguity)
    # Between proxies part of the spread is each model's fixed leniency and tilt, the same on
    # every item; within one proxy all of it is the run's noise.
    for spread, ratio in ((between, 1.5), (within, 2)):
        by_item = {
            item["code"]: np.mean([spread[u] for u in units if u[0] == item["code"]])
            for item in scale
        }
        assert max(by_item.values()) > ratio * min(by_item.values()), by_item
        rho = spearmanr([ambiguity[u] for u in units], [spread[u] for u in units]).statistic
        assert rho > 0.3, rho
    # The items' own ambiguities differ, as drawn from the stated distribution.
    drawn = [item_ambiguity(item["wording"]) for item in ITEMS]
    assert len(set(drawn)) == len(ITEMS) and all(0 < a < 1 for a in drawn)


def test_a_persona_leans_the_same_way_on_every_call_and_two_personas_differ(rated):
    """What comes before the survey (a persona's system message) tilts the answers by a fixed
    amount per persona and kind of item (PROXY_PARAMETERS' persona_leaning); at temperature 0
    a persona answers alike every time, and two personas do not answer alike."""
    questions = questions_text([SurveyItem(**item) for item in ITEMS])

    def values(persona: str | None) -> list:
        found = []
        for _name, scenario, response in rated:
            user = string.Template(USER).substitute(
                scenario=scenario, response=response, questions=questions
            )
            texts = (persona, user) if persona else (user,)
            prompt = Prompt(texts=texts, last_user=user, temperature=0.0)
            reply = json.loads(answer("survey_proxy", MODELS[1], prompt, random.Random(1)))
            found += [a["value"] for a in reply["answers"]]
        return found

    first = "You are taking part in this survey as a woman aged 25-34."
    second = "You are taking part in this survey as a man aged 65 or older."
    assert values(first) == values(first)
    assert len({tuple(values(p)) for p in (first, second, None)}) == 3
