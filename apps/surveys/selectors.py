import json
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import Count, F, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce, TruncMinute
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString

from apps.llm.errors import PromptError
from apps.llm.models import ModelConfig, PromptTemplate, Purpose
from apps.llm.progress import RunCounts, RunProgress, counted, rows_progress
from apps.llm.selectors import (
    model_params_notes,
    prompt_additions,
    prompt_current,
    prompt_render,
)

from . import duration, quality
from .markdown import markdown_html
from .models import (
    ACTIVE_GENERATION,
    PROXY_CALL_STATES,
    Answer,
    Assignment,
    AssignmentStatus,
    Page,
    PageTime,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ProxyCall,
    ProxyCallStatus,
    ProxyRun,
    RejectionCategory,
    ResponseGeneration,
    ReviewStatus,
    Scenario,
    ScenarioCallStatus,
    ScenarioResponse,
    Study,
    StudyKind,
    StudyScenario,
    StudyStatus,
    SurveyItem,
    UnitKind,
)


def people(study: Study):
    """The study's participants who are people (from Prolific, or simulated by the demo):
    proxy models are never reviewed, approved, paid or counted among participants."""
    return study.participants.filter(kind=ParticipantKind.HUMAN)


def study_scenarios_with_counts(*, study: Study):
    """The study's units by name (a scenario's, or an answer unit's label), each with its
    ratings counted: `completed`, and `reserved` (a reservation whose deadline is still
    ahead)."""
    now = timezone.now()
    return (
        StudyScenario.objects.filter(study=study)
        .select_related("scenario")
        .only("pk", "study_id", "kind", "label", "response_id", "response_error", "scenario__name")
        .annotate(
            completed=Count(
                "assignments", filter=Q(assignments__status=AssignmentStatus.COMPLETED)
            ),
            reserved=Count(
                "assignments",
                filter=Q(
                    assignments__status=AssignmentStatus.RESERVED,
                    assignments__reserved_until__gt=now,
                ),
            ),
        )
        .order_by("scenario__name", "label", "pk")
    )


def study_responses(*, study: Study):
    """The study's units by name, each scenario with the response its participants rate."""
    return (
        StudyScenario.objects.filter(study=study)
        .select_related("scenario", "response", "response__model")
        .defer("scenario__record_json")
        .order_by("scenario__name", "label", "pk")
    )


SCENARIOS_PER_PAGE = 50


@dataclass(frozen=True)
class Progress:
    """Where a study's ratings stand (people's only: a proxy's never count), and one page of
    its scenarios with theirs. A rating is reserved while its participant has it and its
    deadline is ahead; timed out once the deadline passed (freed by beat, or not yet)."""

    scenarios: int
    ratings_needed: int
    completed: int
    reserved: int
    timed_out: int
    returned: int
    rejected: int
    complete: int  # scenarios with all their ratings completed
    full: int  # scenarios with all their ratings completed or reserved
    missing_responses: int
    participants: dict[str, int]
    rows: list[StudyScenario]  # the page's scenarios, with `completed` and `reserved`
    page: int
    pages: int

    @property
    def first(self) -> int:
        """The position of the page's first scenario, from 1."""
        return (self.page - 1) * SCENARIOS_PER_PAGE + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0

    @property
    def percent(self) -> float:
        return 100 * self.completed / self.ratings_needed if self.ratings_needed else 0.0


def _ratings(counted: Q):
    """How many of a scenario's ratings are `counted`, as a subquery."""
    ratings = (
        Assignment.objects.filter(counted, study_scenario=OuterRef("pk"))
        .order_by()
        .values("study_scenario")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(ratings), 0)


def study_progress(*, study: Study, page: int = 1) -> Progress:
    """The study's ratings counted, and page `page` of its scenarios (the last page, past
    it): in four queries whatever the number of scenarios and participants, which the study
    page polls."""
    now = timezone.now()
    k = study.ratings_per_scenario
    overdue = Q(status=AssignmentStatus.RESERVED, reserved_until__lte=now)
    ratings = Assignment.objects.filter(study_scenario__study=study).aggregate(
        completed=Count("pk", filter=Q(status=AssignmentStatus.COMPLETED)),
        reserved=Count("pk", filter=Q(status=AssignmentStatus.RESERVED, reserved_until__gt=now)),
        timed_out=Count("pk", filter=Q(status=AssignmentStatus.EXPIRED) | overdue),
        returned=Count("pk", filter=Q(status=AssignmentStatus.RELEASED)),
        rejected=Count("pk", filter=Q(status=AssignmentStatus.REJECTED)),
    )
    scenarios = (
        StudyScenario.objects.filter(study=study)
        .annotate(
            done=_ratings(Q(status=AssignmentStatus.COMPLETED)),
            # services/reservation.py's rule: what counts towards a scenario's k.
            filled=_ratings(
                Q(status=AssignmentStatus.COMPLETED)
                | Q(status=AssignmentStatus.RESERVED, reserved_until__gt=now)
            ),
        )
        .aggregate(
            scenarios=Count("pk"),
            complete=Count("pk", filter=Q(done__gte=k)),
            full=Count("pk", filter=Q(filled__gte=k)),
            missing_responses=Count("pk", filter=Q(kind=UnitKind.SCENARIO, response__isnull=True)),
        )
    )
    pages = max(1, -(-scenarios["scenarios"] // SCENARIOS_PER_PAGE))
    page = min(max(1, page), pages)
    start = (page - 1) * SCENARIOS_PER_PAGE
    rows = list(study_scenarios_with_counts(study=study)[start : start + SCENARIOS_PER_PAGE])
    statuses = dict(
        people(study).values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    return Progress(
        ratings_needed=scenarios["scenarios"] * k,
        participants={label: statuses.get(value, 0) for value, label in ParticipantStatus.choices},
        rows=rows,
        page=page,
        pages=pages,
        **ratings,
        **scenarios,
    )


def study_generation_latest(*, study: Study) -> ResponseGeneration | None:
    """The study's latest request for generated responses, with its model and its calls
    counted (`calls_pending`, `calls_running`, `calls_done`, `calls_failed`, and
    `calls_stalled`: running under a lease that ran out, so its worker stopped; and all but
    the stalled as `counts`, a run's RunCounts): the study page says whether it waits, runs,
    has stalled or failed."""
    now = timezone.now()
    counts = {
        f"calls_{state}": Count("calls", filter=Q(calls__status=state))
        for state in ScenarioCallStatus.values
    }
    stalled = Q(calls__status=ScenarioCallStatus.RUNNING, calls__lease_expires_at__lt=now)
    generation = (
        study.generations.select_related("model")
        .annotate(**counts, calls_stalled=Count("calls", filter=stalled))
        .first()
    )
    if generation is not None:
        generation.counts = RunCounts(
            total=sum(getattr(generation, f"calls_{s}") for s in ScenarioCallStatus.values),
            done=generation.calls_done,
            failed=generation.calls_failed,
            pending=generation.calls_pending,
            running=generation.calls_running,
        )
    return generation


def study_under_way(
    *, study: Study, progress: Progress, generation: ResponseGeneration | None
) -> bool:
    """Whether the study's progress can change without the researcher doing anything: its
    responses are being made, someone holds a reservation, or it is live and short of
    ratings. Otherwise nothing moves, and the study page stops asking."""
    if generation is not None and generation.status in ACTIVE_GENERATION:
        return True
    if progress.reserved:
        return True
    return study.status == StudyStatus.LIVE and progress.completed < progress.ratings_needed


def study_items_frozen(*, study: Study) -> bool:
    """Whether anyone has answered the study: then its items can no longer change."""
    return Answer.objects.filter(item__study=study).exists()


def scenario_imports_recent(*, limit: int = 10) -> list[dict]:
    """The latest imports of scenarios: when, by whom, how many (the scenarios of one file are
    made in one statement, so they share their minute and their importer)."""
    return list(
        Scenario.objects.annotate(minute=TruncMinute("imported_at"))
        .values("minute", "imported_by__username")
        .annotate(count=Count("pk"))
        .order_by("-minute")[:limit]
    )


_ACTION_NAME = re.compile(r"Action:[ \t]*([A-Za-z0-9_]+)")


def scenario_toolkits_described(*, scenario: Scenario) -> str:
    """The record's toolkits, one a line, each with the tools of it that the trajectory
    calls and the final action (a ToolEmu tool's name starts with its toolkit's). The
    dataset carries no toolkit specifications, so the names are all there is to give."""
    called = [*_ACTION_NAME.findall(scenario.trajectory), scenario.final_action]
    lines = []
    for toolkit in scenario.toolkits:
        tools = list(dict.fromkeys(t for t in called if t.startswith(toolkit)))
        lines.append(f"- {toolkit}" + (f": {', '.join(tools)}" if tools else ""))
    return "\n".join(lines)


def scenario_prompt_variables(*, scenario: Scenario) -> dict[str, str]:
    """Every variable a scenario-response prompt can use (llm.models.PROMPT_VARIABLES),
    from the record as imported."""
    trajectory = json.loads(scenario.record_json).get("trajectory", {})
    return {
        "task": scenario.task,
        "user_name": scenario.user_name,
        "user_email": str(trajectory.get("user_email") or ""),
        "toolkits": scenario_toolkits_described(scenario=scenario),
        "trajectory": scenario.trajectory,
        "final_action": scenario.final_action,
        "context": scenario.trajectory,
    }


def scenario_response_messages(*, scenario: Scenario, prompt: PromptTemplate) -> list[dict]:
    """The messages that ask a model for the response to `scenario`'s task."""
    return prompt_render(template=prompt, variables=scenario_prompt_variables(scenario=scenario))


@lru_cache(maxsize=1)
def _participant_with_study() -> tuple[str, list[str], list[str]]:
    """(SQL selecting every column of a participant and its study, their attribute names)."""
    quote = connection.ops.quote_name
    participant_fields = Participant._meta.concrete_fields
    study_fields = Study._meta.concrete_fields
    fields = (*participant_fields, *study_fields)
    converted = [f.name for f in fields if hasattr(f, "from_db_value")]
    if converted:  # the ORM would convert these columns' values; this statement does not
        raise ImproperlyConfigured(f"participants_with_study cannot load {converted}")
    columns = [f"p.{quote(f.column)}" for f in participant_fields]
    columns += [f"s.{quote(f.column)}" for f in study_fields]
    sql = (  # names from the models' metadata; the values are parameters
        f"SELECT {', '.join(columns)} FROM {quote(Participant._meta.db_table)} p"  # noqa: S608
        f" JOIN {quote(Study._meta.db_table)} s ON s.id = p.study_id"
        " WHERE p.id IN ({ids}) AND s.slug = %s"
    )
    return sql, [f.attname for f in participant_fields], [f.attname for f in study_fields]


def participants_with_study(*, ids: list[int], slug: str) -> list[Participant]:
    """The participants among `ids` in the study at `slug`, each with its study loaded.

    What `Participant.objects.select_related("study").filter(pk__in=ids, study__slug=slug)`
    returns, in one statement written once: every participant request starts here, and
    building that query through the ORM costs more than running it (~0.6 ms a request)."""
    if not ids:
        return []
    sql, participant_names, study_names = _participant_with_study()
    split = len(participant_names)
    with connection.cursor() as cursor:
        cursor.execute(sql.format(ids=", ".join(["%s"] * len(ids))), [*ids, slug])
        rows = cursor.fetchall()
    found = []
    for row in rows:
        participant = Participant.from_db(connection.alias, participant_names, row[:split])
        participant.study = Study.from_db(connection.alias, study_names, row[split:])
        found.append(participant)
    return found


def participant_assignments(*, participant: Participant) -> list[Assignment]:
    return list(participant.assignments.select_related("study_scenario").order_by("position"))


def participant_next(*, participant: Participant) -> tuple[str, Assignment | None]:
    """Where the participant goes now: "done", "instructions", "scenario" or "demographics"."""
    if participant.status != ParticipantStatus.ACTIVE:
        return "done", None
    read = PageTime.objects.filter(
        participant=participant, page=Page.INSTRUCTIONS, submitted_at__isnull=False
    ).exists()
    if not read:
        return "instructions", None
    for assignment in participant_assignments(participant=participant):
        if assignment.answered_at is None:
            return "scenario", assignment
    return "demographics", None


@dataclass(frozen=True)
class StudyItems:
    """A study's items as of `version` (and the study's slug when they were read)."""

    version: int
    slug: str
    items: list[SurveyItem]
    by_code: dict[str, SurveyItem]


# study id -> its items as of a version. Shared by the threads of this process; read only.
_items_cache: dict[int, StudyItems] = {}


def study_items(*, study: Study) -> StudyItems:
    """The study's items, in order: from this process's memory while `study.items_version`
    (bumped by the database whenever an item changes, migration 0003) is the one they were
    read at, so participants' requests do not read them again and again.

    The version is read in the same statement as the items, so an entry never holds items
    older than its version; and only committed rows are kept (a transaction in progress might
    still roll its changes, and the version, back)."""
    cached = _items_cache.get(study.pk)
    if cached is not None and cached.version == study.items_version:
        return cached
    rows = list(
        SurveyItem.objects.filter(study=study).annotate(
            version=F("study__items_version"), slug=F("study__slug")
        )
    )
    if not rows:
        return StudyItems(study.items_version, study.slug, [], {})
    entry = StudyItems(rows[0].version, rows[0].slug, rows, {item.code: item for item in rows})
    if not connection.in_atomic_block:
        _items_cache[study.pk] = entry
    return entry


def cached_study_items(*, study_id: int) -> StudyItems | None:
    """What study_items last kept for the study, whatever its version now: the caller checks
    the version against the database (services.answer_save_if_bound does, in its statement)."""
    return _items_cache.get(study_id)


def items_for_page(*, study: Study, position: int, kinds: dict[int, str]) -> list[SurveyItem]:
    """The study's items for page `position` of a participant whose pages show units of
    `kinds` (position -> UnitKind): the items asked of the page's kind of unit, and the
    attention checks placed on this page. A check goes on page `on_page` (the last page, past
    the bundle's end) or, when that page shows another kind of unit than the check is asked
    of, on the next page that shows its kind (else the last one before): everyone who sees
    its kind of unit sees it once. In a study of scenarios, every page's kind is the same."""
    kind = kinds[position]
    return [
        item
        for item in study_items(study=study).items
        if item.unit_kind == kind
        and (not item.attention_check or _check_page(item.on_page, kind, kinds) == position)
    ]


def _check_page(on_page: int, kind: str, kinds: dict[int, str]) -> int:
    pages = sorted(p for p, k in kinds.items() if k == kind)
    wanted = min(on_page, max(kinds))
    return next((p for p in pages if p >= wanted), pages[-1])


def page_kinds(assignments) -> dict[int, str]:
    """Position -> the kind of unit shown there, for `assignments` with their units."""
    return {a.position: a.study_scenario.kind for a in assignments}


def answers_by_code(*, assignment: Assignment, items=None) -> dict[str, Answer]:
    """The assignment's answers by item code (`items`: the study's, if the caller has them)."""
    if items is None:
        return {a.item.code: a for a in assignment.answers.select_related("item")}
    codes = {item.pk: item.code for item in items}
    answers = assignment.answers.order_by()  # no join to items for their order: a dict
    return {codes[a.item_id]: a for a in answers if a.item_id in codes}


def scenario_body_html(*, study_scenario: StudyScenario) -> SafeString:
    """The unit as participants see it: a scenario's task, context and the response to rate;
    or a question and its answer, or its two answers."""
    if study_scenario.kind == UnitKind.SCENARIO:
        return _scenario_body_html(study_scenario.scenario_id, study_scenario.response_id)
    unit = study_scenario
    return _answer_body_html(unit.kind, unit.question_text, unit.answer_text, unit.answer_b_text)


@lru_cache(maxsize=512)
def _scenario_body_html(scenario_id: int, response_id: int | None) -> SafeString:
    # Kept per process: a scenario is stored verbatim and never edited, nor is a response, so
    # the HTML for a pair of ids never changes. ~6 KB each.
    scenario = Scenario.objects.defer("record_json").get(pk=scenario_id)
    response = ScenarioResponse.objects.get(pk=response_id) if response_id else None
    context = {"scenario": scenario, "response": response}
    return render_to_string("surveys/participant/scenario_body.html", context)


@lru_cache(maxsize=512)
def _answer_body_html(kind: str, question: str, answer: str, answer_b: str) -> SafeString:
    # Kept per process by the texts themselves (which the unit's row carries already): the
    # Markdown is rendered once, and a unit whose text changed can never be shown stale.
    context = {"kind": kind, "question": question}
    if kind == UnitKind.PAIR:
        context["answers"] = [
            ("a", "Answer A", markdown_html(answer, name="Answer A")),
            ("b", "Answer B", markdown_html(answer_b, name="Answer B")),
        ]
    else:
        context["answers"] = [("one", "The answer", markdown_html(answer, name="the answer"))]
    return render_to_string("surveys/participant/answer_body.html", context)


def process_caches_clear() -> None:
    """Forget what this process keeps between requests (studies' items, scenarios' HTML).
    For tests: what is kept here can outlive the rows it was read from when a test's
    database is rolled back or emptied under the running process."""
    _items_cache.clear()
    _scenario_body_html.cache_clear()
    _answer_body_html.cache_clear()


@dataclass
class ReviewRow:
    participant: Participant
    seconds: float | None
    flags: list
    assignments: list

    @property
    def grounds(self) -> list:
        """The flags on which Prolific's rules allow a rejection."""
        return [f for f in self.flags if f.grounds]

    @property
    def notes(self) -> list:
        """The flags shown to the researcher that are not grounds for a rejection."""
        return [f for f in self.flags if not f.grounds]

    @property
    def suggested_category(self) -> str:
        """The Prolific rejection category of the clearest flag that is grounds for one."""
        codes = {f.code for f in self.grounds}
        return next((c for code, c in REJECTION_FOR_FLAG.items() if code in codes), "")


REJECTION_FOR_FLAG = {  # clearest first
    "attention": RejectionCategory.FAILED_CHECK,
    "too_fast": RejectionCategory.TOO_QUICKLY,
    "low_effort": RejectionCategory.LOW_EFFORT,
}


@dataclass(frozen=True)
class Review:
    rows: list[ReviewRow]
    estimate: duration.Estimate
    too_fast_rule: str  # as it applies to the study's participants now
    attention_needed: int  # failed checks before a rejection
    attention_checks: int  # the study's


def study_estimate(*, study: Study) -> duration.Estimate:
    """How long the study takes a participant (duration.py), from its items."""
    return duration.study_estimate(study=study, items=study_items(study=study).items)


def review(*, study: Study, status: str | None = None) -> Review:
    """The finished submissions (with `status`, if given) and their quality flags."""
    participants = (
        people(study)
        .filter(status=ParticipantStatus.FINISHED)
        .order_by("finished_at")
        .prefetch_related(
            Prefetch(
                "assignments",
                queryset=Assignment.objects.select_related("study_scenario__scenario")
                .prefetch_related(
                    Prefetch(
                        "answers",
                        queryset=Answer.objects.select_related("item").order_by("item__order"),
                    )
                )
                .order_by("position"),
            )
        )
    )
    if status:
        participants = participants.filter(review_status=status)
    items = study_items(study=study).items
    estimate = duration.study_estimate(study=study, items=items)
    checks = sum(1 for i in items if i.attention_check)
    counted = (
        people(study)
        .filter(status=ParticipantStatus.FINISHED, finished_at__isnull=False)
        .exclude(review_status=ReviewStatus.REJECTED)
    )
    spans = counted.values_list("created_at", "finished_at")
    times = quality.Times.of([(end - start).total_seconds() for start, end in spans])
    rows = []
    for p in participants:
        assignments = list(p.assignments.all())
        answers = [a for x in assignments for a in x.answers.all()]
        explanations = [a.explanation for a in answers if a.item.explanation_required]
        failures = sum(
            1 for a in answers if a.item.attention_check and a.value != a.item.expected_value
        )
        seconds = p.seconds_taken
        counts = seconds is not None and p.review_status != ReviewStatus.REJECTED
        flags = quality.participant_flags(
            seconds=seconds,
            others=times.without(seconds) if counts else times,
            estimated_minutes=estimate.minutes,
            attention_failures=failures,
            attention_checks=checks,
            explanations=explanations,
        )
        rows.append(ReviewRow(p, seconds, flags, assignments))
    rule = quality.too_fast_summary(times=times, estimated_minutes=estimate.minutes)
    return Review(
        rows=rows,
        estimate=estimate,
        too_fast_rule=rule,
        attention_checks=checks,
        attention_needed=quality.attention_failures_needed(minutes=estimate.minutes),
    )


def approvals(*, study: Study):
    return (
        people(study)
        .filter(review_status=ReviewStatus.APPROVED, status=ParticipantStatus.FINISHED)
        .order_by("finished_at")
    )


@dataclass(frozen=True)
class StudyOverview:
    study: Study
    scenarios: int
    ratings_needed: int
    completed: int


def studies_overview(*, limit: int = 10) -> list[StudyOverview]:
    """The most recent studies with their state and how many of their ratings are in, for the
    researcher's home page (subqueries, so that counting two relations multiplies nothing)."""
    scenarios = StudyScenario.objects.filter(study=OuterRef("pk")).values("study")
    completed = Assignment.objects.filter(
        study_scenario__study=OuterRef("pk"), status=AssignmentStatus.COMPLETED
    ).values("study_scenario__study")
    studies = Study.objects.order_by("-created_at").annotate(
        scenario_count=Coalesce(Subquery(scenarios.annotate(n=Count("pk")).values("n")), 0),
        completed_count=Coalesce(Subquery(completed.annotate(n=Count("pk")).values("n")), 0),
    )[:limit]
    return [
        StudyOverview(
            study=s,
            scenarios=s.scenario_count,
            completed=s.completed_count,
            ratings_needed=s.scenario_count * s.ratings_per_scenario,
        )
        for s in studies
    ]


# --- proxy runs -----------------------------------------------------------------------------


def proxy_run_progress(*, run: ProxyRun, now=None) -> RunProgress:
    """Where a proxy run stands, counted from its calls: the page polls this."""
    return rows_progress(
        ProxyCall.objects.filter(run=run),
        states=PROXY_CALL_STATES,
        done=ProxyCallStatus.DONE,
        model_field="participant__model_id",
        launched_at=run.launched_at,
        now=now,
    )


def proxy_runs_overview(*, study: Study) -> list[tuple[ProxyRun, RunCounts]]:
    """The study's proxy runs, newest first, each with its calls counted (one query)."""
    runs = list(study.proxy_runs.prefetch_related("model_configs"))
    rows = (
        ProxyCall.objects.filter(run__study=study)
        .values("run_id")
        .order_by()
        .annotate(**counted(PROXY_CALL_STATES, ProxyCallStatus.DONE))
    )
    counts = {row.pop("run_id"): RunCounts(**row) for row in rows}
    return [(run, counts.get(run.pk, RunCounts())) for run in runs]


# The published study gave its proxies "the same survey" people saw, with each provider's
# default parameters: survey_proxy v2 is that survey, with only the reply's format added
# (apps/llm/migrations/0007_survey_proxy_prompt_v2.py holds the same words; a test checks).
PROXY_SURVEY_USER_TEXT = (
    "The scenario:\n<scenario>\n$scenario\n</scenario>\n\n"
    "The assistant's response:\n<response>\n$response\n</response>\n\n"
    "The questions:\n<questions>\n$questions\n</questions>\n\n"
    'Reply with only a JSON object: {"answers": [{"code": "<the question\'s code>", "value": '
    '"<the key in brackets of the answer you choose>", "explanation": "<why you answered this '
    'way, or \\"\\" where the question does not ask>"}]}, with one answer for every question.'
)
# The same for answer studies (survey_proxy v3, apps/llm/migrations/
# 0013_survey_proxy_answers_prompt.py): the question and its answer or answers, as their page
# shows them, where v2 would call a question "the scenario".
PROXY_ANSWERS_USER_TEXT = (
    "The question:\n<question>\n$question\n</question>\n\n"
    "$answers\n\n"
    "The survey's questions:\n<questions>\n$questions\n</questions>\n\n"
    'Reply with only a JSON object: {"answers": [{"code": "<the question\'s code>", "value": '
    '"<the key in brackets of the answer you choose>", "explanation": "<why you answered this '
    'way, or \\"\\" where the question does not ask>"}]}, with one answer for every question.'
)
# What a survey_proxy prompt may use for each kind of study: the variables its units fill
# (services/proxies.py, proxy_prompt_variables).
PROXY_UNIT_VARIABLES = {
    StudyKind.SCENARIOS: frozenset({"scenario", "response", "questions", "items"}),
    StudyKind.ANSWERS: frozenset({"question", "answers", "questions", "items"}),
}


def proxy_prompt_departures(*, prompt: PromptTemplate) -> list[str]:
    """What a survey_proxy prompt adds to the survey people saw, in plain words (nothing:
    as published). A persona or any other instruction is a variant the researcher chose."""
    return prompt_additions(
        prompt=prompt,
        published=frozenset({PROXY_SURVEY_USER_TEXT, PROXY_ANSWERS_USER_TEXT}),
        what="the survey",
    )


def proxy_prompt_fits(*, prompt: PromptTemplate, kind: str) -> bool:
    """Whether `prompt` can be asked about the units of a study of `kind` (its variables are
    ones those units fill)."""
    return set(prompt.variables) <= PROXY_UNIT_VARIABLES[kind]


def proxy_prompt_default(*, kind: str = StudyKind.SCENARIOS) -> PromptTemplate:
    """The prompt a new proxy run of a study of `kind` takes unless told otherwise: the newest
    survey_proxy version for such studies that is the survey alone, as published (the newest
    for such studies when none is)."""
    versions = PromptTemplate.objects.filter(purpose=Purpose.SURVEY_PROXY).order_by("-version")
    fitting = [p for p in versions if proxy_prompt_fits(prompt=p, kind=kind)]
    published = next((p for p in fitting if not proxy_prompt_departures(prompt=p)), None)
    if published or fitting:
        return published or fitting[0]
    prompt_current(purpose=Purpose.SURVEY_PROXY)  # none at all: its error says so
    raise PromptError(f"No survey_proxy prompt asks about a {StudyKind(kind).label} study's units.")


def proxy_run_parameters(*, run: ProxyRun, model: ModelConfig) -> dict:
    """What a proxy run sends with every call to `model` beyond the provider's defaults
    (the seed, which only makes a call repeatable, aside)."""
    params = dict(model.params or {})
    if run.temperature is not None:
        params["temperature"] = float(run.temperature)
    return params


def proxy_run_fidelity_notes(*, run: ProxyRun, models=None) -> list[str]:
    """Where a proxy run departs from how the published study asked its proxies: for every
    model of the run, or for `models` only."""
    notes = []
    if added := proxy_prompt_departures(prompt=run.prompt):
        notes.append(
            "The published study gave its proxies the same survey people saw, and nothing "
            f"more; in this run {' and '.join(added)}."
        )
    if run.temperature is not None:
        notes.append(
            "The published study left each provider's default parameters; this run sends "
            f"temperature={float(run.temperature)!r} with every call."
        )
    if run.sweep_temperatures:
        sent = ", ".join(repr(float(t)) for t in run.sweep_temperatures)
        notes.append(
            "The published study left each provider's default parameters; this sweep's "
            f"temperature variants send temperature={sent}, one value per variant."
        )
    if run.sweep_personas:
        notes.append(
            "The published study gave its proxies the same survey people saw, and nothing "
            "more; this sweep's persona proxies are each told, in a system message, the age, "
            "gender, education and income of one person who finished the study."
        )
    chosen = run.model_configs.order_by("display_name") if models is None else models
    return notes + model_params_notes(models=chosen)


def study_units_by_kind(*, study: Study) -> dict[str, int]:
    """The study's units counted by kind, by the kind's label ("Question and answer": 12)."""
    rows = study.study_scenarios.values("kind").order_by("kind").annotate(n=Count("pk"))
    return {UnitKind(row["kind"]).label: row["n"] for row in rows}


# A sweep's variants, as `Participant.variant` names them (services/proxies.py).
PERSONA_VARIANT = "persona"


def sweep_temperature_label(temperature) -> str:
    """The variant of a sweep's temperature: "temperature 0.7" (as few digits as it needs)."""
    return f"temperature {Decimal(str(temperature)).normalize():f}"


@dataclass(frozen=True)
class SweepVariant:
    label: str  # "temperature 0.7", or "persona"
    participants: int
    done: int  # calls done
    calls: int


def proxy_sweep_variants(*, run: ProxyRun) -> list[SweepVariant]:
    """A sweep's variants, in the order the sweep lists them (temperatures, then personas),
    each with its proxies and their calls counted."""
    rows = (
        ProxyCall.objects.filter(run=run)
        .values("participant__variant")
        .order_by()
        .annotate(
            participants=Count("participant", distinct=True),
            done=Count("pk", filter=Q(status=ProxyCallStatus.DONE)),
            calls=Count("pk"),
        )
    )
    found = {row.pop("participant__variant"): row for row in rows}
    order = [sweep_temperature_label(t) for t in run.sweep_temperatures]
    order += sorted(set(found) - set(order))
    return [SweepVariant(label=label, **found[label]) for label in order if label in found]
