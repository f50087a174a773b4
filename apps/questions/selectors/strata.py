"""Reads for the strata labels and the quota dashboard."""

from dataclasses import dataclass, field

from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    When,
)

from ..models import (
    LabelStage,
    LabelStatus,
    LengthBucket,
    Question,
    QuestionLabel,
    QuotaSettings,
    Topic,
)

QUEUE_SHOWN = 50
# The labels a researcher gives, each yes or no: the fields of Question and QuestionLabel.
LABELS = ("mentions_prior_attempt", "needs_sensemaking", "needs_guidance")
SETTLED = (LabelStatus.VERIFIED, LabelStatus.RESOLVED)
PENDING = (LabelStatus.LABELLED, LabelStatus.DISPUTED)
IN_STRATA = (LengthBucket.SHORT, LengthBucket.MEDIUM, LengthBucket.LONG)


def questions_to_label(*, topic: Topic | None = None) -> QuerySet[Question]:
    questions = Question.objects.filter(label_status=LabelStatus.UNLABELLED)
    return _in_topic(questions, topic).select_related("topic").order_by("topic__order", "pk")


def questions_to_verify(*, researcher, topic: Topic | None = None) -> QuerySet[Question]:
    """Labelled questions waiting for verification by `researcher`: not their own labels."""
    own = QuestionLabel.objects.filter(
        question=OuterRef("pk"), stage=LabelStage.LABEL, researcher=researcher
    )
    questions = Question.objects.filter(label_status=LabelStatus.LABELLED).exclude(Exists(own))
    return _in_topic(questions, topic).select_related("topic").order_by("topic__order", "pk")


def labels_blind_to(*, viewer) -> Q:
    """Of questions: those whose labels `viewer` may not read yet. A question's first labels
    wait for another researcher, who verifies them by giving their own without seeing
    them; until then only their labeller sees them (pages, exports and console alike)."""
    return Q(label_status=LabelStatus.LABELLED) & ~Q(labelled_by_id=viewer.pk)


def labels_as_shown(questions: QuerySet[Question], *, viewer) -> QuerySet[Question]:
    """`questions` with `labels_hidden` (labels_blind_to `viewer`) and, for each label,
    `<label>_shown`: its value, or None where it is hidden."""
    hidden = labels_blind_to(viewer=viewer)
    shown = {
        f"{name}_shown": Case(When(hidden, then=None), default=F(name), output_field=BooleanField())
        for name in LABELS
    }
    return questions.annotate(labels_hidden=hidden, **shown)


@dataclass
class LabelQueue:
    to_verify: list[Question]
    to_verify_count: int
    to_label: list[Question]
    to_label_count: int

    @property
    def next(self) -> Question | None:
        # Verifying first: it finishes a question, labelling only starts one.
        return (self.to_verify or self.to_label or [None])[0]


def label_queue(*, researcher, topic: Topic | None = None) -> LabelQueue:
    to_verify = questions_to_verify(researcher=researcher, topic=topic)
    to_label = questions_to_label(topic=topic)
    return LabelQueue(
        to_verify=list(to_verify[:QUEUE_SHOWN]),
        to_verify_count=to_verify.count(),
        to_label=list(to_label[:QUEUE_SHOWN]),
        to_label_count=to_label.count(),
    )


def label_step_for(*, question: Question, researcher) -> str:
    """What `researcher` can do with `question` now: "label", "verify", or "" (nothing:
    their own labels wait for someone else, or the labels are settled or disputed)."""
    if question.label_status == LabelStatus.UNLABELLED:
        return "label"
    if question.label_status == LabelStatus.LABELLED:
        labeller = question.labels.filter(stage=LabelStage.LABEL).values_list(
            "researcher_id", flat=True
        )
        return "" if researcher.pk in labeller else "verify"
    return ""


def disputed_questions(*, topic: Topic | None = None) -> QuerySet[Question]:
    """Disputed questions, each with its labeller's and verifier's labels prefetched as
    `given` (label stage first)."""
    labels = QuestionLabel.objects.filter(stage__in=[LabelStage.LABEL, LabelStage.VERIFY])
    labels = labels.select_related("researcher").order_by("created_at")
    questions = Question.objects.filter(label_status=LabelStatus.DISPUTED)
    return (
        _in_topic(questions, topic)
        .select_related("topic")
        .prefetch_related(Prefetch("labels", queryset=labels, to_attr="given"))
        .order_by("topic__order", "pk")
    )


def quota_settings() -> QuotaSettings:
    """The bank's targets; the defaults while the seeded row is missing (never written here)."""
    return QuotaSettings.objects.filter(pk=1).first() or QuotaSettings(pk=1)


@dataclass
class Stratum:
    key: str
    label: str
    count: int
    minimum: int
    settled: int | None = None  # labels only: how many of `count` are verified or resolved

    @property
    def shortfall(self) -> int:
        return max(0, self.minimum - self.count)

    @property
    def pending(self) -> int:
        return self.count - self.settled if self.settled is not None else 0


@dataclass
class TopicQuota:
    topic: Topic
    total: int
    target: int
    over: int
    unlabelled: int
    lengths: list[Stratum] = field(default_factory=list)
    labels: list[Stratum] = field(default_factory=list)

    @property
    def shortfall(self) -> int:
        return max(0, self.target - self.total)

    @property
    def gaps(self) -> list[Stratum]:
        return [s for s in self.lengths + self.labels if s.shortfall]


# The published strata: a prior attempt mentioned or not, and each need present. A question
# that needs both counts in both; one that needs neither counts in neither.
LABEL_STRATA = [
    ("prior_yes", "Mentions a prior attempt", Q(mentions_prior_attempt=True)),
    ("prior_no", "Mentions no prior attempt", Q(mentions_prior_attempt=False)),
    ("sensemaking", "Asks for sensemaking", Q(needs_sensemaking=True)),
    ("guidance", "Asks for guidance", Q(needs_guidance=True)),
]


def quota_table(*, settings: QuotaSettings | None = None) -> list[TopicQuota]:
    """Per topic: the bank's questions within the strata (a question of 1,000 characters or
    more is outside them, counted apart) per length bucket, and per label among the
    labelled ones (an unlabelled question has no prior-attempt or need labels yet)."""
    settings = settings or quota_settings()
    labelled = ~Q(label_status=LabelStatus.UNLABELLED)
    settled = Q(label_status__in=SETTLED)
    counts = {"total": Count("pk", filter=Q(length_bucket__in=IN_STRATA))}
    counts["over"] = Count("pk", filter=Q(length_bucket=LengthBucket.OVER))
    counts["unlabelled"] = Count(
        "pk", filter=Q(length_bucket__in=IN_STRATA, label_status=LabelStatus.UNLABELLED)
    )
    for bucket in IN_STRATA:
        counts[bucket] = Count("pk", filter=Q(length_bucket=bucket))
    for key, _label, condition in LABEL_STRATA:
        in_strata = Q(length_bucket__in=IN_STRATA) & condition
        counts[key] = Count("pk", filter=in_strata & labelled)
        counts[f"{key}_settled"] = Count("pk", filter=in_strata & settled)
    rows = {r["topic"]: r for r in Question.objects.values("topic").annotate(**counts)}
    empty = dict.fromkeys(counts, 0)
    minimum = settings.minimum_per_stratum
    table = []
    for topic in Topic.objects.all():
        row = rows.get(topic.pk, empty)
        quota = TopicQuota(
            topic=topic,
            total=row["total"],
            target=settings.target_per_topic,
            over=row["over"],
            unlabelled=row["unlabelled"],
        )
        quota.lengths = [
            Stratum(key=b, label=LengthBucket(b).label, count=row[b], minimum=minimum)
            for b in IN_STRATA
        ]
        quota.labels = [
            Stratum(
                key=key, label=label, count=row[key], minimum=minimum, settled=row[f"{key}_settled"]
            )
            for key, label, _condition in LABEL_STRATA
        ]
        table.append(quota)
    return table


def _in_topic(questions: QuerySet[Question], topic: Topic | None) -> QuerySet[Question]:
    return questions.filter(topic=topic) if topic is not None else questions
