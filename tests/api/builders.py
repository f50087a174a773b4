"""Rows for the API's tests, made through the services as the pages make them: a finished
sampling run graded by the offline grader (with scores), a calibration of it, and a study
whose people and proxy models have answered; and researchers' tokens."""

from dataclasses import dataclass

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.accounts.services import api_token_create
from apps.grading.models import GradingRun
from apps.grading.services.calibration import calibration_create, calibration_set_create
from apps.llm.models import ModelConfig
from apps.runs.models import SamplingRun
from apps.surveys.models import Study
from tests.analysis.builders import person, proxy, rate
from tests.factories import ModelConfigFactory, offline_model, user_with_role
from tests.grading.builders import answered_run, graded_run

# A participant's explanation that a spreadsheet would run as a formula.
HOSTILE = '=HYPERLINK("http://example.org/steal","click")'


@dataclass
class World:
    researcher: User
    sampling_run: SamplingRun
    grading_run: GradingRun
    grader: ModelConfig
    study: Study
    people: list
    proxies: list


def token_for(user: User, name: str = "notebook") -> str:
    _token, key = api_token_create(user=user, name=name)
    return key


def bearer(key: str) -> dict:
    """The test client's keyword for the Authorization header."""
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def world_make(offline_url: str, make_study) -> World:
    erin = user_with_role(Role.EXPERT, username="erin-api")
    rosa = user_with_role(Role.REVIEWER, username="rosa-api")
    researcher = user_with_role(Role.RESEARCHER, username="rahul-api")
    second = user_with_role(Role.RESEARCHER, username="sam-api")
    sampling = answered_run(
        {"erin": erin, "rosa": rosa},
        offline_url,
        questions=2,
        samples=2,
        models=("offline-terse", "offline-thorough"),
    )
    grader = offline_model(offline_url, name="offline-grader")
    grading = graded_run(sampling, grader)
    calibration_set = calibration_set_create(
        sampling_run=sampling,
        models=list(sampling.model_configs.all()),
        second_grader=second,
        user=researcher,
        name="Calibration",
        seed=3,
    )
    calibration_create(calibration_set=calibration_set, grading_run=grading, user=researcher)

    study = make_study(count=3, live=False)
    people = []
    for number in (1, 2):
        participant = person(study, number, prolific_session_id=f"{number + 100:024x}")
        rate(participant, {0: {"H2": "4", "P1": "2"}, 1: {"H2": "5"}}, explanation=HOSTILE)
        people.append(participant)
    proxies = []
    model = ModelConfigFactory(name="offline-friendly")
    for run in (1, 2):
        participant = proxy(study, model, run)
        rate(participant, {0: {"H2": "3"}, 2: {"P1": "1"}}, explanation="A proxy's reason")
        proxies.append(participant)
    return World(
        researcher=researcher,
        sampling_run=sampling,
        grading_run=grading,
        grader=grader,
        study=study,
        people=people,
        proxies=proxies,
    )
