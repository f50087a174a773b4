"""What made the demo's data, as the demo records it for its study (`StudySimulation`) and on
its grading run (`GradingRun.simulation`): each part (people, proxies, answers, grades, expert
grades) with the parameters of what generated it. The simulated people's come from
`simulated_people.PEOPLE_PARAMETERS`; the offline provider's from the provider itself, over
HTTP (GET /v1/offline/parameters), since the product never imports it. The reports show a
record as it is stored (apps/analysis/templates/analysis/_demo_notice.html), in its own words.
"""

import httpx
from django.conf import settings

from .simulated_answer_people import ANSWER_PEOPLE_PARAMETERS
from .simulated_people import PEOPLE_PARAMETERS

PARAMETERS_PATH = "/offline/parameters"
RUBRICS_PATH = "/offline/rubrics"
ANSWERER_FIELDS = [
    "style",
    "address",
    "violate",
    "lead",
    "focus",
    "unprofessional",
    "imperative",
    "overstate",
]
GRADER_FIELDS = ["grading_threshold", "grader_error"]
MADE_BY = "Assay's demo loader (manage.py load_demo, which make run calls)"


def served_as(litellm_model: str) -> str:
    """The name the offline provider knows a model by (litellm sends it without "openai/")."""
    return litellm_model.rsplit("/", 1)[-1]


def provider_parameters(models: list[str]) -> dict | None:
    """The offline provider's parameters and what each of `models` (names it serves) makes of
    them, as it reports them; None when it does not answer."""
    url = settings.OFFLINE_LLM_URL.rstrip("/") + PARAMETERS_PATH
    try:
        response = httpx.get(url, params=[("model", name) for name in models], timeout=5)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


def provider_rubrics_register(rubrics: list[dict]) -> int | None:
    """Tell the offline provider the criteria of each question's rubric (`rubrics`: dicts of
    "question" and "criteria", each criterion's text, polarity, kind and points), so that its
    answers to those questions address, miss or violate them (a benchmark asks a model the
    question alone); how many it took, or None when it does not answer."""
    url = settings.OFFLINE_LLM_URL.rstrip("/") + RUBRICS_PATH
    try:
        response = httpx.post(url, json={"rubrics": rubrics}, timeout=10)
        response.raise_for_status()
        return response.json()["registered"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def _per_model(reported: dict, names: dict[str, str], fields: list[str]) -> list[dict]:
    """One parameter per (model, field): `names` maps the provider's name to the display name."""
    about = reported["model_fields"]
    return [
        {"name": f"{names[model['id']]}: {field}", "value": model[field], "about": about[field]}
        for model in reported["models"]
        if model["id"] in names
        for field in fields
    ]


def study_simulation(
    *, people: int, proxies: dict[str, str], runs: int, writer: str, reported: dict
) -> dict:
    """The record for the report demo's study. `proxies` maps each proxy's name at the
    provider to its display name; `reported` is `provider_parameters(list(proxies))`."""
    return {
        "made_by": MADE_BY,
        "parts": [
            {
                "what": "People",
                "how": f"{people} simulated people: their answers and explanations were made up "
                "by apps/demo/simulated_people.py from these parameters. Nobody took part.",
                "parameters": [p._asdict() for p in PEOPLE_PARAMETERS],
            },
            {
                "what": "Proxies",
                "how": f"{', '.join(proxies.values())}, {runs} runs each: offline demo models, "
                "answered by Assay's offline provider from these parameters, as it reported "
                "them. How far they disagree with each other and with themselves follows an "
                "ambiguity drawn for each item and scenario. No real model answered.",
                "parameters": [
                    *reported["survey_proxy"],
                    *_per_model(reported, proxies, ["proxy_leniency"]),
                ],
            },
            {
                "what": "Responses",
                "how": f"The responses people and proxies rated were written by {writer}, an "
                "offline demo model, not by a real assistant.",
                "parameters": [],
            },
        ],
    }


def answer_study_simulation(
    *,
    people: int,
    proxies: dict[str, str],
    runs: int,
    sweep: str,
    answers_by: str,
    reported: dict,
) -> dict:
    """The record for the answer-study demo. `proxies` maps each proxy's name at the provider
    to its display name; `sweep` says what the persona sweep ran; `reported` is
    `provider_parameters(list(proxies))`."""
    return {
        "made_by": MADE_BY,
        "parts": [
            {
                "what": "People",
                "how": f"{people} simulated people: their ratings and explanations were made "
                "up by apps/demo/simulated_answer_people.py from each answer's rubric score and "
                "the auto-rater's verdicts, with these parameters. Nobody took part.",
                "parameters": [p._asdict() for p in ANSWER_PEOPLE_PARAMETERS],
            },
            {
                "what": "Proxies",
                "how": f"{', '.join(proxies.values())}, {runs} runs each, and {sweep}: offline "
                "demo models, answered by Assay's offline provider from these parameters, as it "
                "reported them. No real model answered.",
                "parameters": [
                    *reported["survey_proxy"],
                    *_per_model(reported, proxies, ["proxy_leniency"]),
                ],
            },
            {
                "what": "Answers",
                "how": f"The answers rated were drawn from {answers_by}, whose answers offline "
                "demo models wrote; see that grading run's record.",
                "parameters": [],
            },
        ],
    }


def grading_simulation(
    *,
    answerers: dict[str, str],
    grader: tuple[str, str],
    experts: dict[str, str],
    reported: dict,
) -> dict:
    """The record for the model-run demo's grading run. Each mapping is the provider's name ->
    the display name; `reported` is `provider_parameters` of all of them."""
    grader_name, grader_shown = grader
    parts = [
        {
            "what": "Answers",
            "how": f"Sampled from {', '.join(answerers.values())}: offline demo models. Each "
            "answer is made of statements that address, miss or violate the criteria of the "
            "demo's rubrics (the demo tells the provider its rubrics; the models are asked the "
            "question alone), and of statements that give it its presentation (background "
            "before the advice, a tangent, a flippant remark, orders, a promise of complete "
            "safety). Each statement is in an answer with the chance these parameters give, "
            "moved by the question's and the criterion's difficulty and the answer's luck. No "
            "real model answered.",
            "parameters": [
                *reported["answering"],
                *_per_model(reported, answerers, ANSWERER_FIELDS),
            ],
        },
        {
            "what": "Grades",
            "how": f"By {grader_shown}, an offline demo grader: a criterion is met when a "
            "sentence of the answer holds enough of its key terms (a presentation criterion: "
            "when the answer holds the provider's sentence for it, or lacks it), and it turns "
            "a verdict round at its stated error rate.",
            "parameters": [
                *reported["grading"],
                *_per_model(reported, {grader_name: grader_shown}, GRADER_FIELDS),
            ],
        },
    ]
    if experts:
        parts.append(
            {
                "what": "Expert grades",
                "how": f"Simulated by {' and '.join(experts.values())}: offline graders, each "
                "with the threshold and error rate its name gives it; disagreements settled for "
                "the first one's reading. No expert graded.",
                "parameters": _per_model(reported, experts, GRADER_FIELDS),
            }
        )
    return {"made_by": MADE_BY, "parts": parts}
