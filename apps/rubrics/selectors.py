import datetime as dt
import difflib
from collections import Counter, defaultdict
from dataclasses import dataclass

from django.contrib.postgres.search import TrigramSimilarity
from django.db.models import Count, OuterRef, Prefetch, Q, Subquery
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.questions.models import Question, Topic

from .models import (
    OPEN_STATES,
    Criterion,
    DraftJob,
    EventAction,
    Kind,
    Origin,
    Polarity,
    QuestionAssignment,
    Rubric,
    RubricEvent,
    RubricState,
    Suggestion,
    SuggestionStatus,
    TopicClaiming,
)

NOT_STARTED = "not_started"
STATE_ORDER = [
    (NOT_STARTED, "Not started"),
    (RubricState.DRAFT, "Draft"),
    (RubricState.CHANGES_REQUESTED, "Changes requested"),
    (RubricState.IN_REVIEW, "In review"),
    (RubricState.APPROVED, "Approved"),
]


def _latest(field: str):
    return Subquery(
        Rubric.objects.filter(question=OuterRef("pk")).order_by("-version").values(field)[:1]
    )


def questions_with_state():
    """Questions annotated with their latest version's id, number and state."""
    return Question.objects.select_related("topic").annotate(
        rubric_id=_latest("pk"), rubric_version=_latest("version"), rubric_state=_latest("state")
    )


@dataclass(frozen=True)
class Totals:
    max_points: int
    positive: int
    negative: int
    factual: int
    presentation: int
    positive_points: int
    negative_points: int
    count: int


def criteria_totals(*, criteria) -> Totals:
    criteria = list(criteria)
    return Totals(
        max_points=sum(c.points for c in criteria),
        positive=sum(1 for c in criteria if c.polarity == Polarity.POSITIVE),
        negative=sum(1 for c in criteria if c.polarity == Polarity.NEGATIVE),
        factual=sum(1 for c in criteria if c.kind == Kind.FACTUAL),
        presentation=sum(1 for c in criteria if c.kind == Kind.PRESENTATION),
        positive_points=sum(c.points for c in criteria if c.polarity == Polarity.POSITIVE),
        negative_points=sum(c.points for c in criteria if c.polarity == Polarity.NEGATIVE),
        count=len(criteria),
    )


def rubric_criteria(*, rubric: Rubric) -> tuple[list[Criterion], list[Criterion]]:
    """(the rubric's own criteria, its shared presentation criteria), in order."""
    own, shared = [], []
    for criterion in rubric.criteria.order_by("order", "pk"):
        (shared if criterion.origin == Origin.SHARED else own).append(criterion)
    return own, shared


def latest_draft_job(*, rubric: Rubric) -> DraftJob | None:
    return rubric.draft_jobs.select_related("model").first()


def pending_suggestions(*, rubric: Rubric) -> list[Suggestion]:
    return list(rubric.suggestions.filter(status=SuggestionStatus.PENDING).order_by("job", "order"))


def comments_by_criterion(*, rubric: Rubric):
    """({criterion id: [comments]}, [comments on the whole rubric])."""
    by_criterion, general = defaultdict(list), []
    for comment in rubric.comments.select_related("author"):
        if comment.criterion_id:
            by_criterion[comment.criterion_id].append(comment)
        else:
            general.append(comment)
    return dict(by_criterion), general


def similar_questions(*, question: Question, limit: int = 3) -> list[dict]:
    """The questions of the same topic whose text is most like this one's (pg_trgm), each with
    its latest approved criteria, so experts can check that similar questions reward the same
    advice."""
    approved = Rubric.objects.filter(question=OuterRef("pk"), state=RubricState.APPROVED)
    rows = (
        Question.objects.filter(topic_id=question.topic_id)
        .exclude(pk=question.pk)
        .annotate(
            similarity=TrigramSimilarity("text", question.text),
            approved_id=Subquery(approved.order_by("-version").values("pk")[:1]),
        )
        .order_by("-similarity", "external_id")[:limit]
    )
    rows = list(rows)
    rubrics = Rubric.objects.in_bulk([r.approved_id for r in rows if r.approved_id])
    own = defaultdict(list)
    for c in Criterion.objects.filter(rubric__in=rubrics).exclude(origin=Origin.SHARED):
        own[c.rubric_id].append(c)
    return [
        {
            "question": r,
            "similarity": r.similarity,
            "rubric": rubrics.get(r.approved_id),
            "criteria": sorted(own.get(r.approved_id, []), key=lambda c: (c.order, c.pk)),
        }
        for r in rows
    ]


def expert_dashboard(*, user: User) -> dict:
    mine = (
        questions_with_state()
        .filter(assignment__author=user)
        .order_by("topic__order", "external_id")
    )
    groups = {key: [] for key, _label in STATE_ORDER}
    for question in mine:
        groups[question.rubric_state or NOT_STARTED].append(question)
    claimable = (
        Question.objects.select_related("topic")
        .filter(topic__claiming__open=True)
        .filter(Q(assignment__isnull=True) | Q(assignment__author__isnull=True))
        .exclude(assignment__reviewer=user)
        .order_by("topic__order", "external_id")[:50]
    )
    return {
        "groups": [(key, label, groups[key]) for key, label in STATE_ORDER],
        "assigned_count": sum(len(v) for v in groups.values()),
        "topics": topic_progress(),
        "claimable": list(claimable),
    }


def topic_progress() -> list[dict]:
    states = Counter()
    for topic_id, state in questions_with_state().values_list("topic_id", "rubric_state"):
        states[(topic_id, state or NOT_STARTED)] += 1
    rows = []
    for topic in Topic.objects.annotate(total=Count("questions")).order_by("order", "name"):
        approved = states[(topic.pk, RubricState.APPROVED)]
        open_count = sum(states[(topic.pk, s)] for s in OPEN_STATES)
        rows.append(
            {
                "topic": topic,
                "total": topic.total,
                "approved": approved,
                "in_progress": open_count,
                "percent": round(100 * approved / topic.total) if topic.total else 0,
            }
        )
    return rows


def reviewer_queue(*, user: User) -> dict:
    in_review = questions_with_state().filter(rubric_state=RubricState.IN_REVIEW)
    return {
        "mine": list(in_review.filter(assignment__reviewer=user).order_by("external_id")),
        "open": list(
            in_review.filter(Q(assignment__isnull=True) | Q(assignment__reviewer__isnull=True))
            .exclude(assignment__author=user)
            .order_by("external_id")
        ),
        "waiting_on_author": list(
            questions_with_state()
            .filter(assignment__reviewer=user, rubric_state=RubricState.CHANGES_REQUESTED)
            .order_by("external_id")
        ),
    }


def workspace_questions(*, topic: Topic | None = None):
    questions = questions_with_state().select_related("assignment__author", "assignment__reviewer")
    if topic is not None:
        questions = questions.filter(topic=topic)
    return questions.order_by("topic__order", "external_id")


def people_with_role(*, role: Role):
    return User.objects.filter(groups__name=str(role), is_active=True).order_by("username")


def claiming_by_topic() -> list[tuple[Topic, TopicClaiming | None]]:
    claims = {c.topic_id: c for c in TopicClaiming.objects.select_related("default_reviewer")}
    return [(topic, claims.get(topic.pk)) for topic in Topic.objects.all()]


def stale_rubrics(*, older_than_days: int):
    """Each question's latest approved version last verified before the cut-off, when no
    newer version is being worked on."""
    cutoff = timezone.now() - dt.timedelta(days=older_than_days)
    latest_approved = (
        Rubric.objects.filter(question=OuterRef("question"), state=RubricState.APPROVED)
        .order_by("-version")
        .values("pk")[:1]
    )
    open_versions = Rubric.objects.filter(state__in=OPEN_STATES).values("question_id")
    return (
        Rubric.objects.filter(state=RubricState.APPROVED, verified_at__lt=cutoff)
        .filter(pk=Subquery(latest_approved))
        .exclude(question_id__in=open_versions)
        .select_related("question__topic", "approved_by")
        .order_by("verified_at")
    )


def question_history(*, question: Question) -> list[dict]:
    """Every version, newest first, with its events and the differences from the one before."""
    versions = list(
        question.rubrics.select_related("created_by", "submitted_by", "approved_by")
        .prefetch_related(
            Prefetch("criteria", queryset=Criterion.objects.order_by("order", "pk")),
            "events__actor",
        )
        .order_by("version")
    )
    history, previous = [], None
    for rubric in versions:
        history.append(
            {
                "rubric": rubric,
                "events": list(rubric.events.all()),
                "diff": version_diff(old=previous, new=rubric) if previous else None,
            }
        )
        previous = rubric
    return list(reversed(history))


def version_diff(*, old: Rubric, new: Rubric) -> dict:
    """Criteria added, removed and changed from `old` to `new` (matched by lineage, else text)."""
    old_criteria = list(old.criteria.all())
    new_criteria = list(new.criteria.all())
    by_pk = {c.pk: c for c in old_criteria}
    by_text = {c.text.lower(): c for c in old_criteria}
    matched, added, changed = set(), [], []
    for criterion in new_criteria:
        before = by_pk.get(criterion.derived_from_id) or by_text.get(criterion.text.lower())
        if before is None or before.pk in matched:
            added.append(criterion)
            continue
        matched.add(before.pk)
        fields = [
            f
            for f in ("text", "polarity", "kind", "points")
            if getattr(before, f) != getattr(criterion, f)
        ]
        if fields:
            changed.append(
                {
                    "before": before,
                    "after": criterion,
                    "fields": fields,
                    "text_diff": word_diff(before=before.text, after=criterion.text),
                }
            )
    removed = [c for c in old_criteria if c.pk not in matched]
    return {"added": added, "removed": removed, "changed": changed, "from_version": old.version}


def word_diff(*, before: str, after: str) -> str:
    """HTML of the word-level difference: <del> and <ins> around escaped words."""
    a, b = before.split(), after.split()
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        if op in ("delete", "replace"):
            parts.append(f"<del>{escape(' '.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            parts.append(f"<ins>{escape(' '.join(b[j1:j2]))}</ins>")
        if op == "equal":
            parts.append(escape(" ".join(a[i1:i2])))
    return mark_safe(" ".join(parts))  # noqa: S308 -- every word above is escaped


def export_rubrics(*, approved_only: bool, topic: Topic | None = None):
    """One version per question: the latest approved, or the latest of any state."""
    rubrics = Rubric.objects.all()
    if approved_only:
        rubrics = rubrics.filter(state=RubricState.APPROVED)
    latest = rubrics.filter(question=OuterRef("question")).order_by("-version").values("pk")[:1]
    chosen = rubrics.filter(pk=Subquery(latest))
    if topic is not None:
        chosen = chosen.filter(question__topic=topic)
    return (
        chosen.select_related("question__topic")
        .prefetch_related(Prefetch("criteria", queryset=Criterion.objects.order_by("order", "pk")))
        .order_by("question__topic__order", "question__external_id")
    )


def assignment_for(*, question: Question) -> QuestionAssignment | None:
    return (
        QuestionAssignment.objects.filter(question=question)
        .select_related("author", "reviewer")
        .first()
    )


# Whoever did one of these to a version is one of its authors, and may not approve it.
AUTHORING_ACTIONS = (
    EventAction.CREATED,
    EventAction.IMPORTED,
    EventAction.CRITERION_ADDED,
    EventAction.CRITERION_EDITED,
    EventAction.CRITERION_DELETED,
    EventAction.CRITERION_MOVED,
    EventAction.SUBMITTED,
)


def rubric_authors(*, rubric: Rubric) -> set[int]:
    """Ids of the users who wrote this version: the assigned author and everyone who edited it."""
    ids = set(
        RubricEvent.objects.filter(rubric=rubric, action__in=AUTHORING_ACTIONS)
        .exclude(actor=None)
        .values_list("actor_id", flat=True)
    )
    author = QuestionAssignment.objects.filter(question_id=rubric.question_id).values_list(
        "author_id", flat=True
    )
    ids.update(a for a in author if a)
    return ids
