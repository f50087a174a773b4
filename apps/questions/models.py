from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Deferrable, Q

from apps.llm.models import CallStatus, Embedding, Leased, ModelConfig, Run


class Topic(models.Model):
    """A topic of the question bank: the nine of the published design are seeded by a
    migration; researchers may rename them and add more."""

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=60, unique=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self):
        return self.name


class LengthBucket(models.TextChoices):
    SHORT = "short", "Short (under 333 characters)"
    MEDIUM = "medium", "Medium (333 to 665 characters)"
    LONG = "long", "Long (666 to 999 characters)"
    OVER = "over", "1,000 characters or more (outside the strata)"


# The published strata (HelpBench): thirds of the 1,000 characters a question may have.
MEDIUM_FROM, LONG_FROM, LENGTH_LIMIT = 333, 666, 1000


def length_bucket_for(text: str) -> str:
    """The stratification bucket of a question's length, in characters."""
    count = len(text)
    if count < MEDIUM_FROM:
        return LengthBucket.SHORT
    if count < LONG_FROM:
        return LengthBucket.MEDIUM
    return LengthBucket.LONG if count < LENGTH_LIMIT else LengthBucket.OVER


# --- the candidate pool -------------------------------------------------------------------


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    IMPORTING = "importing", "Importing"
    DONE = "done", "Imported"
    REFUSED = "refused", "Refused"


class FileFormat(models.TextChoices):
    CSV = "csv", "CSV"
    JSONL = "jsonl", "JSON Lines"


class ImportBatch(models.Model):
    """One file of candidate posts: imported whole, or refused whole with its problems."""

    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64, db_index=True)
    file_format = models.CharField(max_length=10, choices=FileFormat.choices)
    size_bytes = models.BigIntegerField(default=0)
    status = models.CharField(
        max_length=10, choices=ImportStatus.choices, default=ImportStatus.QUEUED
    )
    rows = models.PositiveIntegerField(default=0, help_text="Posts imported.")
    topic_counts = models.JSONField(default=dict, blank=True, help_text="Posts per topic name.")
    problems = models.JSONField(default=list, blank=True, help_text="Why it was refused.")
    upload_path = models.CharField(
        max_length=500, blank=True, help_text="Where an upload waits for its worker."
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "import batches"
        constraints = [
            # The same file imported twice would double the pool: refused by its digest.
            models.UniqueConstraint(
                fields=["sha256"], condition=Q(status="done"), name="import_file_once"
            )
        ]

    def __str__(self):
        return f"{self.filename} ({self.get_status_display().lower()})"


class SourcePost(models.Model):
    """A candidate help post (the pool: millions of rows, written by COPY)."""

    external_id = models.CharField(max_length=100)
    subreddit = models.CharField(max_length=100)
    title = models.TextField()
    body = models.TextField()
    created_utc = models.DateTimeField()
    topic_ids = ArrayField(models.IntegerField(), help_text="The topics it is labelled with.")
    body_chars = models.PositiveIntegerField(help_text="Characters in the body.")
    # No database foreign key: COPY would run a trigger per row to check it (millions), and
    # the importer writes a batch's posts in the transaction that creates the batch.
    batch = models.ForeignKey(
        ImportBatch,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="posts",
    )
    line = models.PositiveIntegerField(help_text="The line of the file the post starts on.")

    class Meta:
        constraints = [
            # Deferred, so that an import finds every duplicate (and its lines) before commit
            # instead of failing on the first.
            models.UniqueConstraint(
                fields=["external_id"],
                name="source_post_external_id",
                deferrable=Deferrable.DEFERRED,
            )
        ]

    def __str__(self):
        return self.external_id


class SourcePostTopic(models.Model):
    """A post's topic, one row each: sampling reads these narrow rows by index, never the
    wide posts. No database foreign keys, for the reason `SourcePost.batch` has none."""

    # Indexed by the unique (topic, post) alone: each index costs the import time.
    topic = models.ForeignKey(
        Topic, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False
    )
    post = models.ForeignKey(
        SourcePost,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["topic", "post"], name="source_post_topic")]

    def __str__(self):
        return f"post {self.post_id} in topic {self.topic_id}"


# --- sampling and screening ---------------------------------------------------------------

# The longest note a screener may keep with a decision (the forms and the column say so).
NOTE_MAX_CHARS = 5_000


class Sample(models.Model):
    """A draw of posts for one topic: `size` uniformly at random from the posts labelled
    with it and never sampled before, reproducible from `seed` over the same pool."""

    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="samples")
    size = models.PositiveIntegerField(default=100)
    seed = models.BigIntegerField()
    pool = models.PositiveIntegerField(default=0, help_text="Posts it was drawn from.")
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    drawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-drawn_at"]

    def __str__(self):
        return f"{self.topic}: {self.size} posts (seed {self.seed})"


class ScreeningOutcome(models.TextChoices):
    OPEN = "open", "Being screened"
    INCLUDED = "included", "Included"
    EXCLUDED = "excluded", "Excluded"


class SampledPost(models.Model):
    """A post drawn into a sample, to be screened by two researchers. A post is sampled at
    most once, ever (the unique post)."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="posts")
    post = models.OneToOneField(SourcePost, on_delete=models.PROTECT, related_name="sampled")
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()
    outcome = models.CharField(
        max_length=10, choices=ScreeningOutcome.choices, default=ScreeningOutcome.OPEN
    )
    decisions_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["sample", "position"]
        indexes = [models.Index(fields=["outcome", "decisions_count"])]

    def __str__(self):
        return f"{self.post} in {self.sample}"


class ExclusionReason(models.Model):
    """Why a screener excluded a post: a configurable list, seeded by a migration."""

    text = models.CharField(max_length=200, unique=True)
    order = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True, help_text="Offered to screeners.")

    class Meta:
        ordering = ["order", "text"]

    def __str__(self):
        return self.text


class ScreeningDecision(models.Model):
    """One researcher's decision on a sampled post, made without seeing the other's."""

    sampled = models.ForeignKey(SampledPost, on_delete=models.CASCADE, related_name="decisions")
    researcher = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    include = models.BooleanField()
    reason = models.ForeignKey(ExclusionReason, null=True, blank=True, on_delete=models.PROTECT)
    note = models.TextField(blank=True, max_length=NOTE_MAX_CHARS)
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sampled", "decided_at"]
        constraints = [
            models.UniqueConstraint(fields=["sampled", "researcher"], name="one_decision_each"),
            models.CheckConstraint(
                condition=Q(include=True, reason__isnull=True)
                | Q(include=False, reason__isnull=False),
                name="exclusion_has_reason",
            ),
        ]

    def __str__(self):
        return f"{self.researcher} {'included' if self.include else 'excluded'} {self.sampled}"


class ScreeningWithdrawal(models.Model):
    """A screening decision its researcher undid before the post's pair was complete: the
    decision as it was, kept when its row is deleted (a withdrawn decision counts nowhere)."""

    sampled = models.ForeignKey(SampledPost, on_delete=models.CASCADE, related_name="withdrawals")
    researcher = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    include = models.BooleanField()
    reason = models.ForeignKey(ExclusionReason, null=True, blank=True, on_delete=models.PROTECT)
    note = models.TextField(blank=True, max_length=NOTE_MAX_CHARS)
    decided_at = models.DateTimeField()
    withdrawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-withdrawn_at", "-pk"]

    def __str__(self):
        return f"{self.researcher} withdrew a decision on {self.sampled}"


# --- the bank -----------------------------------------------------------------------------

# What each of the two needs means (HelpBench labels each question for both, independently).
SENSEMAKING_HELP = "Asks for help understanding what happened or what something means."
GUIDANCE_HELP = "Asks what to do."


class LabelStatus(models.TextChoices):
    UNLABELLED = "unlabelled", "Not labelled"
    LABELLED = "labelled", "Labelled, to verify"
    VERIFIED = "verified", "Verified"
    DISPUTED = "disputed", "Disputed, to resolve"
    RESOLVED = "resolved", "Resolved"


class Question(models.Model):
    """A help question in the bank: the final (rewritten) text that models answer."""

    external_id = models.CharField(
        "question id", max_length=100, unique=True, help_text="The id used in imports and exports."
    )
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="questions")
    text = models.TextField()
    original_text = models.TextField(blank=True, help_text="The post before rewriting, if any.")
    source_post = models.OneToOneField(
        SourcePost, null=True, blank=True, on_delete=models.PROTECT, related_name="question"
    )
    length_bucket = models.CharField(max_length=10, choices=LengthBucket.choices)
    mentions_prior_attempt = models.BooleanField(default=False)
    # The published benchmark's two needs, each labelled yes or no on its own: a question may
    # ask for both, one or neither (read with `label_status`: unlabelled is not "no").
    needs_sensemaking = models.BooleanField(default=False, help_text=SENSEMAKING_HELP)
    needs_guidance = models.BooleanField(default=False, help_text=GUIDANCE_HELP)
    label_status = models.CharField(
        max_length=12, choices=LabelStatus.choices, default=LabelStatus.UNLABELLED
    )
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    rewrite = models.OneToOneField(
        "Rewrite",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The model rewrite the approved text came from.",
    )
    rewrite_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    rewrite_approved_at = models.DateTimeField(null=True, blank=True)
    rewrite_cosine = models.FloatField(
        "rewrite cosine (TF-IDF)",
        null=True,
        blank=True,
        help_text="Cosine similarity of the TF-IDF vectors of the rewrite and the original, "
        "fitted on the bank. The published study does not say how it computed its cosine: "
        "TF-IDF is Assay's choice (apps/questions/similarity.py).",
    )
    rewrite_trigram_overlap = models.FloatField(
        null=True,
        blank=True,
        help_text="Jaccard overlap of the word 3-grams of the rewrite and the original.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic__order", "external_id"]

    def __str__(self):
        return self.external_id


class LabelStage(models.TextChoices):
    LABEL = "label", "Labelled"
    VERIFY = "verify", "Verified"
    RESOLVE = "resolve", "Resolved"


class QuestionLabel(models.Model):
    """One researcher's strata labels for a question: the labeller's, the verifier's (given
    without seeing the first), and, when they disagree, the resolution."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="labels")
    stage = models.CharField(max_length=10, choices=LabelStage.choices)
    researcher = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    mentions_prior_attempt = models.BooleanField()
    needs_sensemaking = models.BooleanField(help_text=SENSEMAKING_HELP)
    needs_guidance = models.BooleanField(help_text=GUIDANCE_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["question", "stage"], name="one_label_per_stage")
        ]

    def __str__(self):
        return f"{self.get_stage_display()} {self.question} ({self.researcher})"


class QuotaSettings(models.Model):
    """The bank's targets (one row): questions per topic, and the least each stratum
    (length bucket, prior attempt yes/no, needs sensemaking, needs guidance) should have in
    every topic: the published benchmark asks for at least 10 of each per topic."""

    target_per_topic = models.PositiveIntegerField(default=50)
    minimum_per_stratum = models.PositiveIntegerField(default=10)

    class Meta:
        verbose_name = verbose_name_plural = "quota settings"

    def __str__(self):
        return f"{self.target_per_topic} per topic, at least {self.minimum_per_stratum} per stratum"


# --- rewriting ----------------------------------------------------------------------------


class RewriteJob(Run):
    """Questions rewritten by one model with one pinned rewrite prompt version."""

    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")

    class Meta(Run.Meta):
        pass

    def __str__(self):
        return f"Rewrite {self.pk} by {self.model}"


class RewriteStatus(models.TextChoices):
    PENDING = "pending", "Waiting"
    RUNNING = "running", "Running"
    DONE = "done", "Rewritten"
    FAILED = "failed", "Failed"


class Rewrite(Leased):
    """A model's rewrite of one question's original post (a row the bulk engine calls)."""

    job = models.ForeignKey(RewriteJob, on_delete=models.CASCADE, related_name="rewrites")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="rewrites")
    status = models.CharField(
        max_length=10, choices=RewriteStatus.choices, default=RewriteStatus.PENDING
    )
    text = models.TextField(blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    reserved_usd = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="The cost held against the job's budget while the call is made.",
    )
    latency_ms = models.PositiveIntegerField(default=0)
    error_kind = models.CharField(max_length=20, choices=CallStatus.choices, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # set by the engine's claim
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["job", "question"], name="one_rewrite_per_job")
        ]

    def __str__(self):
        return f"{self.question} in {self.job}"


# --- cosine of embeddings (the researcher's choice of method) -------------------------------


class EmbeddingCosineJobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    SUPERSEDED = "superseded", "Replaced by a newer job"


class EmbeddingCosineJob(models.Model):
    """A researcher's request to compute, with one embedding model, the cosine between every
    approved rewrite and its original (similarity.EMBEDDING_COSINE_METHOD): a method the
    researcher chooses beside the bank's TF-IDF cosine. A worker computes it
    (workers/questions.py); progress is counted from its rows."""

    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=10,
        choices=EmbeddingCosineJobStatus.choices,
        default=EmbeddingCosineJobStatus.QUEUED,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Embedding cosines {self.pk} by {self.model}"


class EmbeddingCosineStatus(models.TextChoices):
    PENDING = "pending", "Being computed"
    DONE = "done", "Computed"
    FAILED = "failed", "Failed"


class EmbeddingCosine(models.Model):
    """The cosine between the embeddings of a question's original post and its approved
    text, both made by one embedding model; the two vectors it was computed from are kept
    (apps/llm's Embedding). A failure keeps its reason and has no number."""

    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="embedding_cosines"
    )
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    job = models.ForeignKey(
        EmbeddingCosineJob,
        on_delete=models.CASCADE,
        related_name="cosines",
        help_text="The job that computed it last.",
    )
    status = models.CharField(
        max_length=10,
        choices=EmbeddingCosineStatus.choices,
        default=EmbeddingCosineStatus.PENDING,
    )
    cosine = models.FloatField(null=True, blank=True)
    original_embedding = models.ForeignKey(
        Embedding,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The vector of the original post.",
    )
    rewrite_embedding = models.ForeignKey(
        Embedding,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The vector of the approved text.",
    )
    error_kind = models.CharField(max_length=20, choices=CallStatus.choices, blank=True)
    error = models.TextField(blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["question", "model"]
        constraints = [
            models.UniqueConstraint(fields=["question", "model"], name="embedding_cosine_once"),
            # A number only when computed, from both vectors; never beside a failure.
            models.CheckConstraint(
                condition=(
                    Q(
                        status=EmbeddingCosineStatus.DONE,
                        cosine__isnull=False,
                        original_embedding__isnull=False,
                        rewrite_embedding__isnull=False,
                    )
                    | (~Q(status=EmbeddingCosineStatus.DONE) & Q(cosine__isnull=True))
                ),
                name="embedding_cosine_only_when_done",
            ),
        ]

    def __str__(self):
        return f"{self.question} by {self.model}: {self.get_status_display().lower()}"
