"""Rubrics in and out: `assay-questions/1` JSON and HealthBench JSONL.

HealthBench's points mean something else than Assay's. There, a criterion with negative
points subtracts them when it is *met*, the denominator is the sum of the positive points
only, and an example's score may fall below 0 or above 1: only the aggregate (the mean over
examples) is clipped to [0, 1]. In Assay (docs/rubrics.md, "Scoring") a negative criterion earns its
points when the answer *avoids* it, the maximum is the sum of all points, and every response's
score is already in [0, 1]. So a HealthBench criterion worth -6 becomes an Assay "should avoid"
criterion worth 6 (points in 5, 3, 2, 1 only, which may need a mapping the researcher
chooses); the plan says so before anything is written, and a plan that changes any points
must be confirmed.

Axes and kinds: HealthBench tags each criterion with one axis (`axis:accuracy`,
`axis:completeness`, `axis:context_awareness`, `axis:instruction_following`,
`axis:communication_quality`). Only communication quality is presentation; every other axis
is factual. Assay keeps a kind, not an axis, so an export names the one axis it knows (the
presentation kind's) and invents none for factual criteria.

Every line and item is checked against the database's and the editor's limits (criterion
text at most `CRITERION_MAX_CHARS`, question text at most `QUESTION_TEXT_MAX`, ids as the
bank's), after `apps.console.uploads` has read the file. Nothing here touches the database;
`services.imports` plans and commits.
"""

import json
from dataclasses import dataclass, field

from apps.console.uploads import UploadRefused, json_parse, text_decode
from apps.questions.errors import FormatError
from apps.questions.interchange import (
    FORMAT,
    MAX_FILE_BYTES,
    NEEDS,
    QUESTION_TEXT_MAX,
    QuestionRecord,
    id_valid,
    load_json,
    question_records,
    shown,
    text_problem,
    where,
)
from apps.questions.models import LabelStatus

from .models import CRITERION_MAX_CHARS, POINTS, Kind, Origin, Polarity, RubricState

HEALTHBENCH_CONVERSION = (
    "HealthBench scores a met negative criterion by subtracting its points, divides by the "
    "sum of the positive points only, and clips only the aggregate score (the mean over "
    "examples) to 0-1, not each example's. Assay scores a negative criterion as earned when "
    "the answer avoids it and divides by the sum of every criterion's points, so each "
    "response's score is already 0-1. Each criterion with negative points is imported as a "
    "'should avoid' criterion worth the absolute value, so scores are not comparable with "
    "HealthBench's. Axes become kinds: axis:communication_quality is presentation; every "
    "other axis (accuracy, completeness, context awareness, instruction following) is "
    "factual. An export tags presentation criteria with axis:communication_quality and "
    "factual ones with no axis, since Assay does not record which factual axis a criterion "
    "had."
)
MAX_IMPORT_BYTES = 10 * 1024 * 1024  # a rubric file, checked before it is read
PRESENTATION_AXIS = "axis:communication_quality"
SHARED_TAG = "assay:shared"
RESCALE_WARNING = (
    "{count} criterion point value(s) change in this import (listed as 'points ... →' "
    "below). Confirm the rescaling to import them; a re-import of an Assay export changes "
    "no points."
)


def _nearest(points: int) -> int:
    # Ties go up (4 -> 5): a HealthBench 4 is closer in weight to "essential" than "useful".
    return min(POINTS, key=lambda allowed: (abs(allowed - points), -allowed))


def _bands(points: int) -> int:
    # HealthBench uses -10..10; four equal-width bands onto 1, 2, 3, 5.
    return 1 if points <= 2 else 2 if points <= 4 else 3 if points <= 6 else 5


POINT_MAPPINGS = {
    "refuse": ("Refuse points outside 5, 3, 2, 1", None),
    "nearest": ("Nearest of 5, 3, 2, 1 (ties up; above 5 becomes 5)", _nearest),
    "bands": ("Bands: 1-2 → 1, 3-4 → 2, 5-6 → 3, 7 and more → 5", _bands),
}
CONVERSATIONS = {
    "refuse": "Refuse prompts with more than one message",
    "join": "Join the conversation into the question text, one paragraph per turn",
}


@dataclass
class PlannedCriterion:
    text: str
    polarity: str
    kind: str
    points: int
    source_points: int | None = None
    note: str = ""
    shared: bool = False


@dataclass
class PlannedRubric:
    question: QuestionRecord
    criteria: list[PlannedCriterion]
    source_max: int | None = None  # HealthBench's maximum (positive points only)

    @property
    def assay_max(self) -> int:
        return sum(c.points for c in self.criteria)


@dataclass
class ImportPlan:
    format: str
    filename: str
    rubrics: list[PlannedRubric] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The file's shared presentation criteria (assay-questions/1), checked; None if absent.
    presentation_criteria: list[PlannedCriterion] | None = None
    rescaled: list[str] = field(default_factory=list)  # "where: 7 → 5", one per criterion

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.rubrics)

    @property
    def rescale_warning(self) -> str:
        return RESCALE_WARNING.format(count=len(self.rescaled)) if self.rescaled else ""


def _criterion(
    at: str, item: object, mapping: str, *, kind_default: str = Kind.FACTUAL
) -> tuple[PlannedCriterion | None, list[str]]:
    if not isinstance(item, dict):
        return None, [f"{at}: must be a JSON object, found {shown(item)}"]
    problems = []
    text, polarity = item.get("text"), item.get("polarity")
    kind, points = item.get("kind", kind_default), item.get("points")
    if problem := text_problem(at, "text", text, CRITERION_MAX_CHARS):
        problems.append(problem)
    if polarity not in Polarity.values:
        problems.append(
            f'{at}, field "polarity": must be "positive" or "negative", found {shown(polarity)}'
        )
    if kind not in Kind.values:
        problems.append(
            f'{at}, field "kind": must be "factual" or "presentation", found {shown(kind)}'
        )
    mapped, note, problem = _map_points(points, mapping, f'{at}, field "points"')
    if problem:
        problems.append(problem)
    if problems:
        return None, problems
    planned = PlannedCriterion(
        text=" ".join(text.split()),
        polarity=polarity,
        kind=kind,
        points=mapped,
        source_points=points,
        note=note,
    )
    return planned, []


def _map_points(
    points: object, mapping: str, at: str, *, rescale: bool = False
) -> tuple[int, str, str]:
    """(points, note, problem) for a magnitude; bools are not numbers here.

    With `rescale` (another scale's points: HealthBench) a chosen mapping applies to every
    value, so that it stays monotonic; otherwise only values outside the set are mapped.
    """
    if isinstance(points, bool) or not isinstance(points, int) or points <= 0:
        return 0, "", f"{at}: must be a whole number of points above 0, found {shown(points)}"
    convert = POINT_MAPPINGS.get(mapping, POINT_MAPPINGS["refuse"])[1]
    if points in POINTS and (convert is None or not rescale):
        return points, "", ""
    if convert is None:
        return (
            0,
            "",
            (f"{at}: {points} is outside 5, 3, 2, 1; choose a points mapping to convert it"),
        )
    mapped = convert(points)
    return mapped, ("" if mapped == points else f"points {points} → {mapped} ({mapping})"), ""


def plan_assay(
    content: bytes | str, filename: str, topic_names: set[str], points_mapping: str = "refuse"
) -> ImportPlan:
    plan = ImportPlan(format="assay", filename=filename)
    try:
        doc = load_json(content, filename)
        records = question_records(doc, filename, topic_names)
    except FormatError as exc:
        plan.problems = exc.problems
        return plan
    for record in records:
        item = doc["questions"][record.index]
        plan.problems.extend(provenance_problems(where(record.index, item), item))
        raw = item.get("criteria") or []
        if not isinstance(raw, list):
            plan.problems.append(f'{where(record.index, item)}, field "criteria": must be a list')
            continue
        criteria = []
        for number, entry in enumerate(raw):
            at = f"{where(record.index, item)}, criteria[{number}]"
            planned, problems = _criterion(at, entry, points_mapping)
            plan.problems.extend(problems)
            if planned:
                criteria.append(planned)
        plan.problems.extend(_duplicates(where(record.index, item), criteria))
        _note_rescaled(plan, where(record.index, item), criteria)
        if criteria:
            plan.rubrics.append(PlannedRubric(question=record, criteria=criteria))
    skipped = len(records) - len(plan.rubrics)
    if skipped:
        plan.notes.append(f"{skipped} question(s) have no criteria; no rubric is made for them.")
    plan.presentation_criteria = _presentation_criteria(doc, plan.problems)
    return plan


def provenance_problems(at: str, item: dict) -> list[str]:
    """What is wrong with the rubric version and state an export notes beside each rubric
    (where it came from; an imported rubric is always a new draft here)."""
    problems = []
    if "rubric_version" in item:
        version = item["rubric_version"]
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            problems.append(
                f'{at}, field "rubric_version": must be a whole number from 1, '
                f"found {shown(version)}"
            )
    if "rubric_state" in item and not (
        isinstance(item["rubric_state"], str) and item["rubric_state"] in RubricState.values
    ):
        states = ", ".join(f'"{state}"' for state in RubricState.values)
        problems.append(
            f'{at}, field "rubric_state": must be one of {states}, '
            f"found {shown(item['rubric_state'])}"
        )
    return problems


def _presentation_criteria(doc: dict, problems: list[str]) -> list[PlannedCriterion] | None:
    """The file's shared presentation criteria, each checked as any criterion is, of the
    presentation kind and worth 5, 3, 2 or 1 (the set is Assay's own: nothing to map); None
    when the file gives none. Found problems are added to `problems`."""
    if "presentation_criteria" not in doc:
        return None
    raw = doc["presentation_criteria"]
    if not isinstance(raw, list):
        problems.append(
            f'field "presentation_criteria": must be a list of criteria, found {shown(raw)}'
        )
        return None
    criteria = []
    for number, entry in enumerate(raw):
        at = f"presentation_criteria[{number}]"
        planned, found = _criterion(at, entry, "refuse", kind_default=Kind.PRESENTATION)
        if planned is not None and planned.kind != Kind.PRESENTATION:
            found = [f'{at}, field "kind": must be "presentation", found {shown(planned.kind)}']
        problems.extend(found)
        if not found:
            criteria.append(planned)
    problems.extend(_duplicates("presentation_criteria", criteria))
    return criteria


def _note_rescaled(plan: ImportPlan, at: str, criteria: list[PlannedCriterion]) -> None:
    plan.rescaled.extend(
        f"{at}: {c.source_points} → {'-' if c.source_points < 0 else ''}{c.points}"
        for c in criteria
        if c.points != abs(c.source_points)
    )


def _duplicates(at: str, criteria: list[PlannedCriterion]) -> list[str]:
    seen, problems = set(), []
    for criterion in criteria:
        key = criterion.text.lower()
        if key in seen:
            problems.append(f"{at}: the criterion {criterion.text[:60]!r} appears twice")
        seen.add(key)
    return problems


def plan_healthbench(
    content: bytes | str,
    filename: str,
    topic_names: set[str],
    *,
    points_mapping: str = "refuse",
    conversation: str = "refuse",
    default_topic: str = "",
) -> ImportPlan:
    plan = ImportPlan(format="healthbench", filename=filename)
    plan.notes.append(HEALTHBENCH_CONVERSION)
    try:
        content = text_decode(content, max_bytes=MAX_FILE_BYTES)
    except UploadRefused as exc:
        plan.problems.append(f"{filename}: {exc}")
        return plan
    seen: dict[str, int] = {}
    # JSONL lines end at "\n" only: str.splitlines would also split at U+2028 and friends,
    # which JSON strings may hold unescaped.
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        at = f"{filename} line {number}"
        try:
            item = json_parse(line)
        except UploadRefused as exc:
            plan.problems.append(f"{at}: {exc}")
            continue
        rubric = _healthbench_item(
            at, item, plan, topic_names, points_mapping, conversation, default_topic
        )
        if rubric is None:
            continue
        ident = rubric.question.external_id
        if ident in seen:
            plan.problems.append(f'{at}, field "prompt_id": the same id as line {seen[ident]}')
            continue
        seen[ident] = number
        plan.rubrics.append(rubric)
    if not plan.rubrics and not plan.problems:
        plan.problems.append(f"{filename}: no rubrics found (one JSON object per line)")
    return plan


def _healthbench_item(at, item, plan, topic_names, points_mapping, conversation, default_topic):
    if not isinstance(item, dict):
        plan.problems.append(f"{at}: must be a JSON object")
        return None
    ident = item.get("prompt_id")
    at = f"{at} ({shown(ident)})" if isinstance(ident, str) else at
    before = len(plan.problems)
    if not id_valid(ident):
        plan.problems.append(
            f'{at}, field "prompt_id": must be an id of letters, digits and . _ : - (at most 100)'
        )
    text = _prompt_text(at, item.get("prompt"), conversation, plan.problems)
    topic = _topic(at, item.get("example_tags"), topic_names, default_topic, plan.problems)
    # A line of an Assay export already holds Assay's points: none of them is rescaled, so an
    # exported file comes back unchanged whatever mapping is chosen for the rest.
    marker = item.get("assay")
    if "assay" in item and not isinstance(marker, dict):
        plan.problems.append(
            f'{at}, field "assay": must be an object (an Assay export\'s rubric_version and '
            f"rubric_state), found {shown(marker)}"
        )
    elif marker is not None:
        plan.problems.extend(provenance_problems(f"{at}, assay", marker))
    rescale = marker is None
    criteria, source_max = [], 0
    raw = item.get("rubrics")
    if not isinstance(raw, list) or not raw:
        plan.problems.append(f'{at}, field "rubrics": must be a non-empty list')
        raw = []
    for number, entry in enumerate(raw):
        converted = _healthbench_criterion(
            f"{at}, rubrics[{number}]", entry, points_mapping, plan, rescale=rescale
        )
        if converted is None:
            continue
        if converted.source_points > 0:
            source_max += converted.source_points
        if not converted.shared:
            criteria.append(converted)
    plan.problems.extend(_duplicates(at, criteria))
    _note_rescaled(plan, at, criteria)
    if len(plan.problems) > before:
        return None
    record = QuestionRecord(
        external_id=ident,
        topic=topic,
        text=text,
        mentions_prior_attempt=False,
        index=len(plan.rubrics),  # unlabelled: HealthBench has no strata labels
    )
    return PlannedRubric(question=record, criteria=criteria, source_max=source_max)


def _prompt_text(at, prompt, conversation, problems) -> str:
    if (
        not isinstance(prompt, list)
        or not prompt
        or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt)
    ):
        problems.append(f'{at}, field "prompt": must be a list of messages with "content"')
        return ""
    if any(not isinstance(m.get("role", "user"), str) for m in prompt):
        problems.append(f'{at}, field "prompt": a message\'s "role" must be text')
        return ""
    if len(prompt) == 1:
        text = prompt[0]["content"].strip()
        if problem := text_problem(at, "prompt[0].content", text, QUESTION_TEXT_MAX):
            problems.append(problem)
        return text
    if conversation != "join":
        problems.append(
            f'{at}, field "prompt": a conversation of {len(prompt)} messages cannot be one '
            "question; choose to join conversations to import it"
        )
        return ""
    text = "\n\n".join(
        f"{m.get('role', 'user').capitalize()}: {m['content'].strip()}" for m in prompt
    )
    if problem := text_problem(at, "prompt (joined)", text, QUESTION_TEXT_MAX):
        problems.append(problem)
    return text


def _tags_problem(at: str, name: str, tags: object) -> str:
    """What is wrong with a list of tags (absent is none), or ''."""
    if tags is not None and not isinstance(tags, list):
        return f'{at}, field "{name}": must be a list of tags, found {shown(tags)}'
    wrong = next((tag for tag in tags or [] if not isinstance(tag, str)), None)
    if wrong is not None:
        return f'{at}, field "{name}": each tag must be text, found {shown(wrong)}'
    return ""


def _topic(at, tags, topic_names, default_topic, problems) -> str:
    if problem := _tags_problem(at, "example_tags", tags):
        problems.append(problem)
        return ""
    themes = [t.split(":", 1)[1] for t in tags or [] if t.startswith("theme:")]
    for theme in themes:
        name = theme.replace("_", " ").strip().lower()
        if name in topic_names:
            return name
    if default_topic in topic_names:
        return default_topic
    found = ", ".join(themes) or "no theme tag"
    problems.append(
        f'{at}, field "example_tags": {found} names none of the topics; choose a default topic'
    )
    return ""


def _healthbench_criterion(
    at, entry, points_mapping, plan, *, rescale: bool = True
) -> PlannedCriterion | None:
    if not isinstance(entry, dict):
        plan.problems.append(f"{at}: must be a JSON object")
        return None
    text, points, tags = entry.get("criterion"), entry.get("points"), entry.get("tags")
    if problem := _tags_problem(at, "tags", tags):
        plan.problems.append(problem)
        return None
    tags = tags or []
    if problem := text_problem(at, "criterion", text, CRITERION_MAX_CHARS):
        plan.problems.append(problem)
        return None
    if isinstance(points, bool) or not isinstance(points, int) or points == 0:
        plan.problems.append(
            f'{at}, field "points": must be a whole number other than 0, found {shown(points)}'
        )
        return None
    mapped, note, problem = _map_points(
        abs(points), points_mapping, f'{at}, field "points" ({points})', rescale=rescale
    )
    if problem:
        plan.problems.append(problem)
        return None
    polarity = Polarity.POSITIVE if points > 0 else Polarity.NEGATIVE
    notes = [note] if note else []
    if points < 0:
        notes.insert(0, f"{points} → should avoid, earns {mapped} when avoided")
    kind = (
        Kind.PRESENTATION
        if PRESENTATION_AXIS in tags or "kind:presentation" in tags
        else Kind.FACTUAL
    )
    return PlannedCriterion(
        text=" ".join(text.split()),
        polarity=polarity,
        kind=kind,
        points=mapped,
        source_points=points,
        note="; ".join(notes),
        # An Assay export's shared criterion: the importing rubric carries the current set.
        shared=SHARED_TAG in tags,
    )


def _in_order(rubric) -> list:
    """The rubric's own criteria in order, then its shared ones."""
    return sorted(rubric.criteria.all(), key=lambda c: (c.origin == Origin.SHARED, c.order, c.pk))


def export_assay(rubrics, shared_criteria, topic_names: list[str]) -> dict:
    """An `assay-questions/1` document with one rubric version per question."""
    return {
        "format": FORMAT,
        "topics": topic_names,
        "presentation_criteria": [
            {"text": c.text, "polarity": c.polarity, "kind": Kind.PRESENTATION, "points": c.points}
            for c in shared_criteria
        ],
        "questions": [
            {
                "id": r.question.external_id,
                "topic": r.question.topic.name,
                "text": r.question.text,
                "mentions_prior_attempt": r.question.mentions_prior_attempt,
                **_needs(r.question),
                "rubric_version": r.version,
                "rubric_state": r.state,
                "criteria": [
                    {"text": c.text, "polarity": c.polarity, "kind": c.kind, "points": c.points}
                    for c in _in_order(r)
                    if c.origin != Origin.SHARED
                ],
            }
            for r in rubrics
        ],
    }


def _needs(question) -> dict:
    """The question's two need labels, null while it is not labelled."""
    labelled = question.label_status != LabelStatus.UNLABELLED
    return {name: getattr(question, name) if labelled else None for name in NEEDS}


def export_healthbench(rubrics) -> str:
    """HealthBench JSONL: negative criteria carry negative points (HealthBench's convention);
    the shared presentation criteria are tagged so a re-import leaves them to the shared set."""
    lines = []
    for r in rubrics:
        lines.append(
            json.dumps(
                {
                    "prompt_id": r.question.external_id,
                    "prompt": [{"role": "user", "content": r.question.text}],
                    "rubrics": [
                        {
                            "criterion": c.text,
                            "points": c.points if c.polarity == Polarity.POSITIVE else -c.points,
                            # Only the presentation kind names its axis; which factual
                            # axis a criterion had is not recorded, so none is invented.
                            "tags": [
                                *([PRESENTATION_AXIS] if c.kind == Kind.PRESENTATION else []),
                                f"kind:{c.kind}",
                                *([SHARED_TAG] if c.origin == Origin.SHARED else []),
                            ],
                        }
                        for c in _in_order(r)
                    ],
                    "example_tags": [f"theme:{r.question.topic.name.replace(' ', '_')}"],
                    "assay": {"rubric_version": r.version, "rubric_state": r.state},
                },
                ensure_ascii=False,
            )
        )
    return "\n".join(lines) + ("\n" if lines else "")
