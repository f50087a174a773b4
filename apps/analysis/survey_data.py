"""A user-perception study's answers, read once from the stored rows, for its report.

People are read after exclusions: their completed assignments (a returned participant's are
released, an expired one's never completed), less the participants rejected in review or who
failed an attention check. Proxies are read from their own assignments (status proxy). Each
proxy model is a group of its own, its runs (proxy participants) the raters within it.
Attention checks are for people and are left out of every analysis.

numpy and pandas are imported where the frames are built: the pages and the API import this
module for its fingerprint and its lists, in every web process, most of which never build one.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Count, Max, Q

from apps.llm.models import ModelConfig
from apps.surveys.models import (
    Answer,
    AssignmentStatus,
    ItemKind,
    Participant,
    ParticipantKind,
    ProxyRun,
    ReviewStatus,
    Study,
    StudyKind,
    StudyScenario,
    SurveyItem,
)
from apps.surveys.selectors import proxy_run_fidelity_notes, proxy_run_parameters

if TYPE_CHECKING:
    import pandas as pd

PEOPLE = "people"
# Changed whenever a statistic of the report is computed differently, so that intervals kept
# for the data (by fingerprint) are never shown beside an estimate made another way.
REPORT_METHODS = 3


@dataclass(frozen=True)
class Item:
    code: str
    wording: str
    kind: str
    labels: tuple[str, ...]  # the answers' labels, lowest first (No, Yes for yes/no items)
    measures: str = ""  # SurveyItem.group: helpfulness, privacy, or "" (in no group)

    @property
    def points(self) -> int:
        return len(self.labels)

    @property
    def ordinal(self) -> bool:
        return self.kind == ItemKind.SCALE

    @property
    def level(self) -> str:
        """Krippendorff's level: ordinal for a labelled scale, nominal for yes/no."""
        return "ordinal" if self.ordinal else "nominal"

    @property
    def group(self) -> str | None:
        """The group whose rho takes this item, as the published study grouped them: the
        helpfulness scale items, the privacy scale items (a yes/no item is in none)."""
        return (self.measures or None) if self.ordinal else None


@dataclass(frozen=True)
class Group:
    key: str  # "people", "model:<id>", or "model:<id>/<variant>" for a sweep's variant
    label: str
    offline: bool = False
    simulated: bool = False
    variant: str = ""  # a sweep's variant ("temperature 1.0", "persona"); "" the model as asked

    @property
    def model_key(self) -> str:
        """The plain proxy of the same model ("model:<id>"), which a variant is set against."""
        return self.key.split("/", 1)[0]


def proxy_key(model_id, variant: str) -> str:
    """The group of a proxy participant: its model, and its variant when a sweep made it."""
    key = f"model:{int(model_id)}"
    return f"{key}/{variant}" if variant else key


@dataclass(frozen=True)
class ProxySetting:
    """How the runs of one proxy model in one proxy run were asked: the prompt version, what
    was sent beyond the provider's defaults, and where that departs from the published
    study (apps/surveys/selectors.py). `run` None: proxies made outside any proxy run."""

    group: str
    run: int | None
    raters: int  # its proxy participants in the analysis
    prompt: str  # "survey_proxy v2", or "" when not recorded
    prompt_version: int | None
    parameters: dict
    departures: tuple[str, ...]


@dataclass
class SurveyData:
    """Every answer of the study's analysis, one row each: group, rater (a participant),
    scenario index, item code, value (1..points; yes 1, no 0) and explanation."""

    study: Study
    items: list[Item]
    scenarios: list[str]  # the units' names, in order; a unit's index is its position here
    groups: list[Group]
    answers: pd.DataFrame
    people: pd.DataFrame  # one row per person analysed: participant, simulated, demographics
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> people
    proxy_settings: list[ProxySetting] = field(default_factory=list)
    # How many units the items are asked of (an answer study's pairs have none of its items).
    units_rated: int | None = None
    by_group: dict[str, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        # Computed once for every table: each answer on -1..1 (a scale's ends and yes/no at
        # -1 and 1, as the paper's Figure 5 maps them), and the answers of each group apart (a
        # report filters by group some hundred times).
        import numpy as np

        answers = self.answers
        points = answers["item"].map({i.code: i.points for i in self.items}).astype(float)
        ordinal = answers["item"].map({i.code: i.ordinal for i in self.items}).astype(bool)
        values = answers["value"].to_numpy(dtype=float)
        answers["unit"] = np.where(
            ordinal, -1 + 2 * (values - 1) / (points - 1).clip(lower=1), 2 * values - 1
        )
        self.by_group = {key: frame for key, frame in answers.groupby("group", sort=False)}

    def answers_of(self, key: str) -> pd.DataFrame:
        return self.by_group.get(key, self.answers.iloc[0:0])

    def group(self, key: str) -> Group:
        return next(g for g in self.groups if g.key == key)

    @property
    def unit_noun(self) -> str:
        """What a unit is called: a scenario, or an answer in a study of a benchmark's answers."""
        return "answer" if self.study.kind == StudyKind.ANSWERS else "scenario"

    @property
    def proxies(self) -> list[Group]:
        return [g for g in self.groups if g.key != PEOPLE]

    @property
    def item(self) -> dict[str, Item]:
        return {item.code: item for item in self.items}


def _value(kind: str, value: str) -> float:
    if kind == ItemKind.YES_NO:
        return {"yes": 1.0, "no": 0.0}.get(value, math.nan)
    try:
        return float(int(value))
    except ValueError:
        return math.nan


def _excluded_humans(study: Study) -> tuple[set[int], dict[str, int]]:
    humans = Participant.objects.filter(study=study, kind=ParticipantKind.HUMAN)
    rejected = set(humans.filter(review_status=ReviewStatus.REJECTED).values_list("pk", flat=True))
    failed = set(humans.filter(attention_failed=True).values_list("pk", flat=True)) - rejected
    reasons = {}
    if rejected:
        reasons["rejected in review"] = len(rejected)
    if failed:
        reasons["failed an attention check"] = len(failed)
    return rejected | failed, reasons


def survey_data(*, study: Study) -> SurveyData:
    import pandas as pd

    items = [
        Item(
            code=i.code,
            wording=i.wording,
            kind=i.kind,
            labels=tuple(i.scale_labels) if i.kind == ItemKind.SCALE else ("No", "Yes"),
            measures=i.group,
        )
        # A pair item (which of two answers helps more) is no rating of one unit: the answer
        # study's report ranks models from it (apps/analysis/answer_study.py).
        for i in SurveyItem.objects.filter(study=study, attention_check=False).exclude(
            kind=ItemKind.PAIR
        )
    ]
    kinds = {item.code: item.kind for item in items}
    units = StudyScenario.objects.filter(study=study).select_related("scenario")
    scenarios = [unit.name for unit in units]
    asked = set(
        SurveyItem.objects.filter(study=study, attention_check=False)
        .exclude(kind=ItemKind.PAIR)
        .values_list("unit_kind", flat=True)
    )
    index = {unit.pk: i for i, unit in enumerate(units)}
    excluded, reasons = _excluded_humans(study)
    rows = (
        Answer.objects.filter(
            assignment__study_scenario__study=study,
            item__attention_check=False,
            assignment__status__in=[AssignmentStatus.COMPLETED, AssignmentStatus.PROXY],
        )
        .exclude(assignment__participant_id__in=excluded)
        .exclude(item__kind=ItemKind.PAIR)  # left out of the items above
        .values_list(
            "assignment__participant_id",
            "assignment__participant__kind",
            "assignment__participant__model_id",
            "assignment__participant__variant",
            "assignment__study_scenario_id",
            "item__code",
            "value",
            "explanation",
        )
        .order_by()
    )
    # Each row's value and group worked out on the tuples, before there is a frame: pandas
    # iterates its columns far slower than Python does a list.
    found = []
    for rater, kind, model_id, variant, unit, code, raw, explanation in rows:
        value = _value(kinds[code], raw)
        if math.isnan(value):
            continue
        group = PEOPLE if kind == ParticipantKind.HUMAN else proxy_key(model_id, variant)
        found.append((group, rater, index[unit], code, value, explanation))
    frame = pd.DataFrame(
        found, columns=["group", "rater", "scenario", "item", "value", "explanation"]
    ).astype({"rater": int, "scenario": int, "value": float})
    people = pd.DataFrame(
        list(
            Participant.objects.filter(
                pk__in=frame.loc[frame["group"] == PEOPLE, "rater"].unique().tolist()
            ).values("pk", "simulated", "age", "gender", "education", "income")
        ),
        columns=["pk", "simulated", "age", "gender", "education", "income"],
    )
    groups = [Group(PEOPLE, "People", simulated=bool(people["simulated"].any()))]
    answered = set(frame["group"])
    variants = set(
        Participant.objects.filter(study=study, kind=ParticipantKind.PROXY).values_list(
            "model_id", "variant"
        )
    )
    models = ModelConfig.objects.in_bulk({model_id for model_id, _ in variants})
    for model_id, variant in sorted(
        variants, key=lambda mv: (models[mv[0]].display_name, mv[1] != "", mv[1])
    ):
        model, key = models[model_id], proxy_key(model_id, variant)
        if key in answered:
            label = f"{model.display_name} ({variant})" if variant else model.display_name
            groups.append(Group(key, label, offline=model.is_offline, variant=variant))
    proxies = frame.loc[frame["group"] != PEOPLE, "rater"].unique().tolist()
    return SurveyData(
        study=study,
        items=items,
        scenarios=scenarios,
        groups=groups,
        answers=frame,
        units_rated=sum(1 for unit in units if unit.kind in asked),
        people=people,
        excluded=reasons,
        proxy_settings=_proxy_settings(proxies),
    )


def _proxy_settings(participants: list[int]) -> list[ProxySetting]:
    counts = list(
        Participant.objects.filter(pk__in=participants)
        .values("model_id", "variant", "temperature", "proxy_run_id")
        .annotate(n=Count("pk"))
        .order_by("model_id", "variant", "proxy_run_id")
    )
    runs = ProxyRun.objects.select_related("prompt").in_bulk(
        {c["proxy_run_id"] for c in counts} - {None}
    )
    models = ModelConfig.objects.in_bulk({c["model_id"] for c in counts})
    found = []
    for c in counts:
        model, run = models[c["model_id"]], runs.get(c["proxy_run_id"])
        key = proxy_key(model.pk, c["variant"])
        if run is None:
            found.append(ProxySetting(key, None, c["n"], "", None, {}, ()))
            continue
        found.append(
            ProxySetting(
                group=key,
                run=run.pk,
                raters=c["n"],
                prompt=str(run.prompt),
                prompt_version=run.prompt.version,
                parameters=_variant_parameters(
                    proxy_run_parameters(run=run, model=model), c["temperature"]
                ),
                departures=tuple(proxy_run_fidelity_notes(run=run, models=[model])),
            )
        )
    return found


def _variant_parameters(parameters: dict, temperature) -> dict:
    """A sweep's variant sends its own temperature in place of the run's."""
    if temperature is None:
        return parameters
    return {**parameters, "temperature": float(temperature)}


def survey_fingerprint(*, study: Study) -> str:
    """A digest that changes whenever anything a report reads changes: answers saved, people
    reviewed or flagged, proxies added. Kept results are valid while it is the same."""
    answers = Answer.objects.filter(assignment__study_scenario__study=study).aggregate(
        n=Count("pk"),
        last=Max("saved_at"),
        top=Max("pk"),
        assignments=Count(
            "assignment", distinct=True, filter=Q(assignment__status=AssignmentStatus.COMPLETED)
        ),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT md5(coalesce(string_agg(concat_ws(':', id, status, review_status,"
            " attention_failed, kind), ',' ORDER BY id), '')) FROM surveys_participant"
            " WHERE study_id = %s",
            [study.pk],
        )
        participants = cursor.fetchone()[0]
    # From the database, not the caller's instance: a trigger bumps the version as items
    # change, so an instance read before that holds an old one.
    version = Study.objects.filter(pk=study.pk).values_list("items_version", flat=True).get()
    items = (version, study.study_scenarios.count())
    text = repr((REPORT_METHODS, sorted(answers.items()), participants, items))
    return hashlib.sha256(text.encode()).hexdigest()


def studies_with_answers():
    """Studies, newest first, each with `people` (who answered, simulated included) and
    `proxies` (proxy participants) counted."""
    return Study.objects.annotate(
        people=Count(
            "participants",
            filter=Q(
                participants__kind=ParticipantKind.HUMAN,
                participants__assignments__answered_at__isnull=False,
            ),
            distinct=True,
        ),
        proxies=Count(
            "participants", filter=Q(participants__kind=ParticipantKind.PROXY), distinct=True
        ),
    ).order_by("-created_at", "-pk")
