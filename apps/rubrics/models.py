from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

from apps.llm.models import Leased, ModelConfig, PromptTemplate
from apps.questions.models import Question, Topic

POINTS = (5, 3, 2, 1)
POINT_CHOICES = [(p, str(p)) for p in POINTS]
CRITERION_MAX_CHARS = 1000  # the editor's limit, which importers keep too
# What people write beside a rubric: a review comment or a reason to send one back, and the
# notes of a shared criteria version (the forms and the columns say so).
COMMENT_MAX_CHARS = 4_000
NOTES_MAX_CHARS = 5_000
USER = settings.AUTH_USER_MODEL


class Polarity(models.TextChoices):
    POSITIVE = "positive", "Should include"
    NEGATIVE = "negative", "Should avoid"


class Kind(models.TextChoices):
    FACTUAL = "factual", "Factual"
    PRESENTATION = "presentation", "Presentation"


class Origin(models.TextChoices):
    EXPERT = "expert", "Expert"
    LLM_SUGGESTED = "llm_suggested", "LLM-suggested"
    SHARED = "shared", "Shared presentation set"


class RubricState(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved", "Approved"


EDITABLE_STATES = (RubricState.DRAFT, RubricState.CHANGES_REQUESTED)
OPEN_STATES = (RubricState.DRAFT, RubricState.IN_REVIEW, RubricState.CHANGES_REQUESTED)


class SharedCriterionSet(models.Model):
    """A version of the presentation criteria that every rubric carries, kept by researchers.

    Versions are never edited: a change publishes version n+1, which open drafts take up;
    rubrics in review or approved keep the version they were written with.
    """

    version = models.PositiveIntegerField(unique=True)
    notes = models.TextField(
        blank=True, max_length=NOTES_MAX_CHARS, help_text="What changed in this version, and why."
    )
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]

    def __str__(self):
        return f"Shared presentation criteria v{self.version}"


class SharedCriterion(models.Model):
    criterion_set = models.ForeignKey(
        SharedCriterionSet, on_delete=models.CASCADE, related_name="criteria"
    )
    text = models.TextField(max_length=CRITERION_MAX_CHARS)
    polarity = models.CharField(max_length=10, choices=Polarity.choices)
    points = models.PositiveSmallIntegerField(choices=POINT_CHOICES)
    order = models.PositiveIntegerField()

    class Meta:
        ordering = ["criterion_set", "order"]
        constraints = [
            models.CheckConstraint(condition=Q(points__in=POINTS), name="shared_points_in_set"),
            models.UniqueConstraint(
                Lower("text"), "criterion_set", name="shared_text_unique_per_set"
            ),
        ]

    def __str__(self):
        return self.text

    @property
    def kind(self) -> str:
        return Kind.PRESENTATION


class Rubric(models.Model):
    """One version of a question's rubric.

    States: draft -> in review -> approved, or back to changes requested -> in review. An
    approved version never changes; editing it starts version n+1 as a draft. `revision` is
    the draft's etag: every change to it must name the revision it was made against, so the
    later of two conflicting saves is refused instead of overwriting the other.
    """

    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="rubrics")
    version = models.PositiveIntegerField()
    state = models.CharField(max_length=20, choices=RubricState.choices, default=RubricState.DRAFT)
    based_on = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    shared_set = models.ForeignKey(
        SharedCriterionSet, on_delete=models.PROTECT, related_name="rubrics"
    )
    revision = models.PositiveIntegerField(default=1)
    reverification_reason = models.TextField(
        blank=True,
        max_length=COMMENT_MAX_CHARS,
        help_text="Why a researcher sent the approved version back for re-verification.",
    )
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField()
    submitted_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(
        null=True, blank=True, help_text="When a reviewer last confirmed this version's advice."
    )

    class Meta:
        ordering = ["question", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["question", "version"], name="rubric_question_version"),
            # At most one version of a question is being worked on at a time.
            models.UniqueConstraint(
                fields=["question"],
                condition=Q(state__in=OPEN_STATES),
                name="one_open_rubric_per_question",
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="rubric_version_min_1"),
            models.CheckConstraint(
                condition=~Q(state=RubricState.APPROVED)
                | Q(approved_at__isnull=False, verified_at__isnull=False),
                name="approved_rubric_has_dates",
            ),
        ]

    def __str__(self):
        return f"{self.question} v{self.version} ({self.get_state_display().lower()})"

    @property
    def is_editable(self) -> bool:
        return self.state in EDITABLE_STATES


class Criterion(models.Model):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="criteria")
    text = models.TextField(max_length=CRITERION_MAX_CHARS)
    polarity = models.CharField(max_length=10, choices=Polarity.choices)
    kind = models.CharField(max_length=15, choices=Kind.choices, default=Kind.FACTUAL)
    points = models.PositiveSmallIntegerField(choices=POINT_CHOICES)
    order = models.PositiveIntegerField()
    origin = models.CharField(max_length=15, choices=Origin.choices, default=Origin.EXPERT)
    derived_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The criterion of the previous version that this one continues.",
    )
    shared_source = models.ForeignKey(
        SharedCriterion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["rubric", "order", "pk"]
        constraints = [
            models.CheckConstraint(condition=Q(points__in=POINTS), name="criterion_points_in_set"),
            models.UniqueConstraint(
                Lower("text"), "rubric", name="criterion_text_unique_per_rubric"
            ),
            models.CheckConstraint(
                condition=Q(origin=Origin.SHARED, shared_source__isnull=False)
                | (~Q(origin=Origin.SHARED) & Q(shared_source__isnull=True)),
                name="criterion_shared_has_source",
            ),
        ]
        verbose_name_plural = "criteria"

    def __str__(self):
        return self.text

    @property
    def is_shared(self) -> bool:
        return self.origin == Origin.SHARED


class ReviewComment(models.Model):
    """A comment on a whole rubric version, or on one of its criteria."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="comments")
    criterion = models.ForeignKey(
        Criterion, null=True, blank=True, on_delete=models.SET_NULL, related_name="comments"
    )
    criterion_text = models.TextField(
        blank=True, help_text="The criterion as it read when commented on."
    )
    author = models.ForeignKey(USER, on_delete=models.PROTECT, related_name="+")
    body = models.TextField(max_length=COMMENT_MAX_CHARS)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self):
        return self.body[:60]


class EventAction(models.TextChoices):
    CREATED = "created", "started this version"
    IMPORTED = "imported", "imported this version"
    CRITERION_ADDED = "criterion_added", "added a criterion"
    CRITERION_EDITED = "criterion_edited", "edited a criterion"
    CRITERION_DELETED = "criterion_deleted", "deleted a criterion"
    CRITERION_MOVED = "criterion_moved", "moved a criterion"
    SHARED_UPDATED = "shared_updated", "took up new shared presentation criteria"
    SUGGESTIONS_REQUESTED = "suggestions_requested", "asked for LLM suggestions"
    SUBMITTED = "submitted", "submitted for review"
    COMMENTED = "commented", "commented"
    CHANGES_REQUESTED = "changes_requested", "requested changes"
    APPROVED = "approved", "approved"
    SENT_BACK = "sent_back", "sent back for re-verification"


class RubricEvent(models.Model):
    """Who did what to a rubric version, when: the history page, and what a refused save shows.

    Events that changed the draft carry the revision they produced.
    """

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=30, choices=EventAction.choices)
    revision = models.PositiveIntegerField(null=True, blank=True)
    criterion = models.ForeignKey(
        Criterion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    summary = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["rubric", "revision"], name="rubricevent_revision")]

    def __str__(self):
        return f"{self.actor} {self.get_action_display()}"


class QuestionAssignment(models.Model):
    """Who writes and who reviews a question's rubric."""

    question = models.OneToOneField(Question, on_delete=models.CASCADE, related_name="assignment")
    author = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="authoring"
    )
    reviewer = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="reviewing"
    )
    claimed = models.BooleanField(default=False, help_text="The author claimed it by topic.")
    assigned_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["question"]
        constraints = [
            models.CheckConstraint(
                condition=Q(author__isnull=True)
                | Q(reviewer__isnull=True)
                | ~Q(author=F("reviewer")),
                name="assignment_reviewer_is_not_author",
            )
        ]

    def __str__(self):
        return f"{self.question}: {self.author} / {self.reviewer}"


class TopicClaiming(models.Model):
    """Whether experts may claim the unassigned questions of a topic themselves."""

    topic = models.OneToOneField(Topic, on_delete=models.CASCADE, related_name="claiming")
    open = models.BooleanField(default=False)
    default_reviewer = models.ForeignKey(
        USER,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Reviewer of claimed questions; blank: any reviewer may take the review.",
    )

    class Meta:
        ordering = ["topic"]
        verbose_name_plural = "topic claiming"

    def __str__(self):
        return f"{self.topic}: {'open' if self.open else 'closed'}"


class AuthoringSettings(models.Model):
    """Configuration of rubric authoring, one row."""

    draft_model = models.ForeignKey(
        ModelConfig,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The model that suggests criteria in the rubric editor.",
    )

    class Meta:
        verbose_name = verbose_name_plural = "authoring settings"

    def __str__(self):
        return "Authoring settings"


class DraftStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class DraftJob(Leased):
    """One "Suggest criteria" request: the model, the pinned prompt, progress and outcome.
    A worker holds it under a lease (apps/llm/leases.py)."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="draft_jobs")
    requested_by = models.ForeignKey(USER, null=True, on_delete=models.SET_NULL, related_name="+")
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    prompt = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=10, choices=DraftStatus.choices, default=DraftStatus.QUEUED
    )
    error = models.TextField(blank=True)
    left_out = models.PositiveSmallIntegerField(
        default=0, help_text="Suggestions dropped because the rubric already had them."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Suggestions for {self.rubric} ({self.status})"


class SuggestionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class Suggestion(models.Model):
    job = models.ForeignKey(DraftJob, on_delete=models.CASCADE, related_name="suggestions")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="suggestions")
    text = models.TextField()
    polarity = models.CharField(max_length=10, choices=Polarity.choices)
    kind = models.CharField(max_length=15, choices=Kind.choices)
    points = models.PositiveSmallIntegerField(choices=POINT_CHOICES)
    order = models.PositiveIntegerField()
    status = models.CharField(
        max_length=10, choices=SuggestionStatus.choices, default=SuggestionStatus.PENDING
    )
    criterion = models.ForeignKey(
        Criterion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "order"]
        constraints = [
            # A task that runs twice cannot store the same suggestion twice.
            models.UniqueConstraint(Lower("text"), "job", name="suggestion_text_unique_per_job"),
            models.CheckConstraint(condition=Q(points__in=POINTS), name="suggestion_points_in_set"),
        ]

    def __str__(self):
        return self.text


class RubricImport(models.Model):
    """An uploaded rubric file: who, what, the options chosen, and whether it was committed."""

    class Format(models.TextChoices):
        ASSAY = "assay", "assay-questions/1 JSON"
        HEALTHBENCH = "healthbench", "HealthBench JSONL"

    uploaded_by = models.ForeignKey(USER, null=True, on_delete=models.SET_NULL, related_name="+")
    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    content = models.TextField()
    format = models.CharField(max_length=15, choices=Format.choices)
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.filename} ({self.get_format_display()})"
