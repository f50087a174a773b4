import hashlib
import secrets
import string
from decimal import Decimal

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from .params import GENERATION_PARAMS, ParamsError, key_destination_problem, params_check

ENV_NAME = RegexValidator(
    r"^[A-Z_][A-Z0-9_]*$", "The name of an environment variable, such as OPENAI_API_KEY."
)
OFFLINE_PREFIX = "offline-"


class Purpose(models.TextChoices):
    SAMPLE = "sample", "Sample an answer"
    GRADE_CRITERION = "grade_criterion", "Grade one criterion"
    GRADE_CHECKLIST = "grade_checklist", "Grade a checklist"
    REWRITE = "rewrite", "Rewrite a post"
    RUBRIC_DRAFT = "rubric_draft", "Draft rubric criteria"
    SCENARIO_RESPONSE = "scenario_response", "Respond to a scenario"
    SURVEY_PROXY = "survey_proxy", "Answer a survey as a proxy"


# What a ledger row's call was for: a prompt's purpose, or embedding texts, which takes no
# prompt (and so is no purpose of PromptTemplate's).
EMBED_PURPOSE = "embedding"
CALL_PURPOSES = [*Purpose.choices, (EMBED_PURPOSE, "Embed texts")]


class ModelKind(models.TextChoices):
    """What a model config serves: chat completions (`gateway.complete`) or embeddings
    (`gateway.embed`). The gateway refuses the other kind of call."""

    CHAT = "chat", "Chat completions"
    EMBEDDING = "embedding", "Embeddings"


# What a prompt of each purpose may use: the variables the app that renders it passes, with
# what each holds (the console lists them beside the prompt; a new version may use no other).
PROMPT_VARIABLES: dict[str, dict[str, str]] = {
    Purpose.SAMPLE: {"question": "The question's text."},
    Purpose.GRADE_CRITERION: {
        "question": "The question's text.",
        "response": "The answer being graded.",
        "criterion": "The criterion's text.",
        "polarity": "positive or negative.",
        "kind": "factual or presentation.",
    },
    Purpose.GRADE_CHECKLIST: {
        "question": "The question's text.",
        "response": "The answer being graded.",
        "criteria": 'The criteria as a JSON list of {"id", "text", "polarity", "kind"}.',
    },
    Purpose.REWRITE: {"post": "The candidate post's original text."},
    Purpose.RUBRIC_DRAFT: {"question": "The question's text.", "topic": "Its topic's name."},
    Purpose.SCENARIO_RESPONSE: {
        "task": "The user's instruction (trajectory.user_instruction).",
        "user_name": "The user's name (trajectory.user_name).",
        "user_email": "The user's email address (trajectory.user_email).",
        "toolkits": "The toolkits the agent may use, each with the tools of it that the "
        "trajectory calls (trajectory.toolkits).",
        "trajectory": "The agent's actions so far, with their inputs and observations, as "
        "recorded (trajectory.executable_trajectory).",
        "final_action": "The action the agent takes next, whose input is the response "
        "(trajectory.final_action).",
        "context": "The same text as trajectory (the name version 1 used).",
    },
    Purpose.SURVEY_PROXY: {
        "scenario": "Scenario studies: the scenario as participants read it: the task, then "
        "the trajectory.",
        "response": "Scenario studies: the response participants rate.",
        "question": "Answer studies: the question as the model was asked it.",
        "answers": "Answer studies: the answer, or Answers A and B of a pair, as participants "
        'read them, each headed and in its tag ("The answer:" <answer>, or "Answer A:" '
        '<answer_a> and "Answer B:" <answer_b>).',
        "items": 'The survey items as a JSON list of {"code", "wording", "kind", "scale_labels"}.',
        "questions": "The survey's questions as participants see them: each item's code and "
        "wording, its answers in order (each with the key an answer gives, in brackets), and "
        '"Why did you answer this way?" where the item asks for an explanation.',
    },
}


class ModelConfig(models.Model):
    """A model that Assay can call through litellm, with the limits every process shares."""

    display_name = models.CharField(max_length=100, unique=True)
    family = models.CharField(max_length=100, help_text="e.g. GPT, Claude, Gemini, Llama")
    version = models.CharField(max_length=100, blank=True)
    released_on = models.DateField(
        "release date",
        null=True,
        blank=True,
        help_text="When the provider released this version. Reports pick a family's newest "
        "model by it (by when the model was added here, when no model of the family has one).",
    )
    litellm_model = models.CharField(
        max_length=200,
        help_text="litellm's model string, e.g. openai/gpt-4.1 or anthropic/claude-sonnet-4-5",
    )
    kind = models.CharField(
        max_length=10,
        choices=ModelKind.choices,
        default=ModelKind.CHAT,
        help_text="Chat completions (answers, grades, rewrites) or embeddings (vectors of "
        "texts, e.g. openai/text-embedding-3-small).",
    )
    api_base = models.URLField(
        blank=True,
        help_text="Only for self-hosted or proxy endpoints. The key variable's key is sent "
        "here only if LLM_KEY_HOSTS allows this host for it; with no key variable, no key is "
        "sent.",
    )
    api_key_env = models.CharField(
        "API key variable",
        max_length=100,
        blank=True,
        validators=[ENV_NAME],
        help_text="The NAME of the environment variable holding the key, never the key itself. "
        "Blank: litellm's own default variable for the provider, which is never sent to an "
        "API base.",
    )
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text='Default generation parameters, e.g. {"temperature": 0.7}: '
        + ", ".join(GENERATION_PARAMS)
        + ".",
    )
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    max_concurrent = models.PositiveIntegerField(
        default=8,
        validators=[MinValueValidator(1)],
        help_text="Calls at once, across every worker. With adaptive concurrency, the ceiling.",
    )
    adapts_concurrency = models.BooleanField(
        "adaptive concurrency",
        default=False,
        help_text="Find the provider's limit instead of keeping to a fixed one: start at the "
        "floor, grow while calls succeed, cut on a 429 (apps/llm/limits.py). Every change is "
        "recorded and drawn on the run page.",
    )
    min_concurrent = models.PositiveIntegerField(
        "floor",
        default=2,
        validators=[MinValueValidator(1)],
        help_text="With adaptive concurrency: where the limit starts, and below which no 429 "
        "cuts it.",
    )
    timeout_seconds = models.PositiveIntegerField(default=120, validators=[MinValueValidator(1)])
    batch_api = models.BooleanField(
        "batch API",
        default=False,
        help_text="Its provider takes batch jobs through litellm's file and batch calls "
        "(OpenAI, Azure, Vertex, Bedrock, Mistral, xAI): a run may then choose batch mode, "
        "answered within 24 hours at the batch price.",
    )
    batch_discount = models.DecimalField(
        "batch price",
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.5"),
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal(1))],
        help_text="What a call in a batch costs, as a share of the list price (0.5: half).",
    )
    batch_max_requests = models.PositiveIntegerField(
        default=50_000,
        validators=[MinValueValidator(1)],
        help_text="The most requests the provider takes in one batch file.",
    )
    batch_max_bytes = models.PositiveBigIntegerField(
        default=200 * 1024 * 1024,
        validators=[MinValueValidator(1024)],
        help_text="The most bytes the provider takes in one batch file.",
    )
    input_price_per_mtok = models.DecimalField(
        "input price (USD per million tokens)",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Overrides litellm's price table. Blank: litellm's price, if it knows one.",
    )
    output_price_per_mtok = models.DecimalField(
        "output price (USD per million tokens)",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["display_name"]

    def __str__(self):
        return self.display_name + (" (offline demo model)" if self.is_offline else "")

    @property
    def concurrency_floor(self) -> int:
        """Where an adaptive limit starts and below which no 429 cuts it (never above the
        ceiling)."""
        return min(self.min_concurrent, self.max_concurrent)

    @property
    def is_offline(self) -> bool:
        """Served by Assay's offline provider: its output is labelled wherever it is shown."""
        return self.litellm_model.rsplit("/", 1)[-1].startswith(OFFLINE_PREFIX)

    @property
    def serves_embeddings(self) -> bool:
        return self.kind == ModelKind.EMBEDDING

    def clean(self):
        if "/" not in self.litellm_model:
            raise ValidationError({"litellm_model": "Name the provider too, e.g. openai/gpt-4.1."})
        try:
            params_check(self.params, offline=self.is_offline)
        except ParamsError as exc:
            raise ValidationError({"params": str(exc)}) from None
        problem = key_destination_problem(
            litellm_model=self.litellm_model, api_base=self.api_base, api_key_env=self.api_key_env
        )
        if problem:
            raise ValidationError({"api_base" if self.api_base else "api_key_env": problem})
        if self.adapts_concurrency and self.min_concurrent > self.max_concurrent:
            raise ValidationError(
                {"min_concurrent": "The floor cannot be above the ceiling (max concurrent)."}
            )


class LimitChange(models.Model):
    """A change of a model's adaptive concurrency limit, shared by every worker
    (apps/llm/limits.py): when, from what to what, and why."""

    class Why(models.TextChoices):
        START = "start", "Growing fast (no 429 yet)"
        GROW = "grow", "Grew (calls succeeded)"
        CUT = "cut", "Cut (the provider answered 429)"
        HOLD = "hold", "Held (the provider's window is spent)"

    model = models.ForeignKey(ModelConfig, on_delete=models.CASCADE, related_name="limit_changes")
    at = models.DateTimeField()
    old = models.PositiveIntegerField()
    new = models.PositiveIntegerField()
    why = models.CharField(max_length=10, choices=Why.choices)
    in_flight = models.PositiveIntegerField(help_text="Calls under way when it changed.")
    hold_seconds = models.FloatField(default=0)

    class Meta:
        indexes = [models.Index(fields=["model", "at"])]
        ordering = ["model", "at", "pk"]

    def __str__(self):
        return f"{self.model}: {self.old} → {self.new} ({self.why})"


class ProviderBatch(models.Model):
    """One batch job at a provider (apps/llm/batches.py): the rows it answers are held by
    it (their lease owner is `owner`), so a worker or beat killed at any moment loses none
    of them and submits none twice."""

    class Status(models.TextChoices):
        PREPARING = "preparing", "Preparing (not yet at the provider)"
        VALIDATING = "validating", "Validating"
        IN_PROGRESS = "in_progress", "In progress"
        FINALIZING = "finalizing", "Finalizing"
        CANCELLING = "cancelling", "Cancelling"
        COMPLETED = "completed", "Completed"
        EXPIRED = "expired", "Expired"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    work = models.CharField(max_length=100, help_text="The kind of bulk work (engine).")
    scope = models.BigIntegerField(help_text="The run (or job) whose rows it answers.")
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="batches")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PREPARING)
    provider_batch_id = models.CharField(max_length=200, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    output_file_id = models.CharField(max_length=200, blank=True)
    error_file_id = models.CharField(max_length=200, blank=True)
    requests = models.PositiveIntegerField(default=0)
    bytes = models.PositiveBigIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0, help_text="Lines answered, by the provider.")
    failed = models.PositiveIntegerField(default=0, help_text="Lines failed, by the provider.")
    recorded = models.PositiveIntegerField(default=0, help_text="Rows it recorded.")
    retried = models.PositiveIntegerField(default=0, help_text="Rows put back to be asked again.")
    error = models.TextField(blank=True)
    held_by = models.CharField(max_length=200, blank=True)
    held_until = models.DateTimeField(
        null=True, blank=True, help_text="Until when a worker submitting or reading it holds it."
    )
    cancel_asked_at = models.DateTimeField(null=True, blank=True)
    read_at = models.DateTimeField(
        null=True, blank=True, help_text="When the provider was last asked."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="When its results were recorded."
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["work", "scope"])]

    def __str__(self):
        return f"batch {self.pk} ({self.get_status_display().lower()}, {self.requests} requests)"

    @property
    def owner(self) -> str:
        """The lease owner of the rows it holds."""
        return f"batch:{self.pk}"

    @property
    def open(self) -> bool:
        return self.recorded_at is None


class BatchRetry(models.TextChoices):
    BATCH = "batch", "In the next batch (at the batch price)"
    LIVE = "live", "Live, at once (at the list price)"


class Batched(models.Model):
    """What a body of bulk work says about batch mode (apps/llm/batches.py)."""

    batch_mode = models.BooleanField(
        default=False,
        help_text="Send the calls through the provider's batch API: about half the price, "
        "answered within 24 hours. Every model of the run needs a batch API.",
    )
    batch_retry = models.CharField(
        "failed batch lines",
        max_length=10,
        choices=BatchRetry.choices,
        default=BatchRetry.BATCH,
        help_text="Where a line the provider failed (a 5xx, a malformed answer) is asked again.",
    )

    class Meta:
        abstract = True


class PromptTemplate(models.Model):
    """A versioned prompt. Once used, a version never changes: editing makes version n+1.

    Text uses `$name` / `${name}` placeholders (string.Template) so that JSON braces in a
    prompt need no escaping.
    """

    purpose = models.CharField(max_length=32, choices=Purpose.choices)
    version = models.PositiveIntegerField()
    system_text = models.TextField(blank=True)
    user_text = models.TextField()
    notes = models.TextField(blank=True, help_text="What changed in this version, and why.")
    used_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["purpose", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["purpose", "version"], name="prompt_purpose_version")
        ]

    def __str__(self):
        return f"{self.purpose} v{self.version}"

    @property
    def available_variables(self) -> dict[str, str]:
        return PROMPT_VARIABLES.get(self.purpose, {})

    @property
    def variables(self) -> list[str]:
        names = []
        for text in (self.system_text, self.user_text):
            for match in string.Template.pattern.finditer(text):
                name = match.group("named") or match.group("braced")
                if name and name not in names:
                    names.append(name)
        return names


class CallStatus(models.TextChoices):
    OK = "ok", "OK"
    RATE_LIMITED = "rate_limited", "Rate limited (429)"
    SERVER_ERROR = "server_error", "Server error (5xx)"
    TIMEOUT = "timeout", "Timed out"
    CONNECTION_ERROR = "connection_error", "Connection error"
    BAD_REQUEST = "bad_request", "Bad request (400)"
    AUTH_ERROR = "auth_error", "Authentication or permission error"
    INVALID_OUTPUT = "invalid_output", "Answer failed validation"
    OTHER = "other", "Other error"


class LLMCall(models.Model):
    """The ledger: one row per attempt sent to a provider."""

    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="calls")
    purpose = models.CharField(max_length=32, choices=CALL_PURPOSES)
    caller = models.CharField(
        max_length=200,
        blank=True,
        db_index=True,
        help_text="What asked for the call, e.g. response:123.",
    )
    attempt = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=20, choices=CallStatus.choices)
    error_class = models.CharField(max_length=200, blank=True)
    error_message = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    prompt_template = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="calls"
    )
    batch = models.ForeignKey(
        ProviderBatch,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="calls",
        help_text="The provider batch it was a line of: priced at the batch price.",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["model", "purpose"], name="llmcall_model_purpose")]

    def __str__(self):
        return f"{self.model_id} {self.purpose} #{self.attempt} {self.status}"


def text_digest(text: str) -> str:
    """The key an embedding is stored under: the SHA-256 of the text, in hex."""
    return hashlib.sha256(text.encode()).hexdigest()


class Embedding(models.Model):
    """A text's vector as an embedding model made it, kept so that the same text is never
    sent to the same model twice (apps/llm/embeddings.py). Keyed by the model config, its
    litellm model string at the time (a config pointed at another model embeds again) and
    the text's SHA-256; the text itself stays with whoever owns it."""

    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="embeddings")
    litellm_model = models.CharField(max_length=200, help_text="The model string that made it.")
    text_sha256 = models.CharField(max_length=64)
    dimensions = models.PositiveIntegerField()
    vector = ArrayField(models.FloatField())
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["model", "litellm_model", "text_sha256"], name="embedding_once"
            ),
            models.CheckConstraint(
                condition=models.Q(dimensions__gt=0), name="embedding_has_dimensions"
            ),
        ]

    def __str__(self):
        return f"{self.model_id}:{self.text_sha256[:12]} ({self.dimensions} dimensions)"


class Leased(models.Model):
    """The fields of a row that a worker claims for a while: see apps/llm/leases.py.

    A leased row has a status field whose choices include a waiting, a running and a failed
    state; the lease adds who holds it and until when."""

    attempts = models.PositiveSmallIntegerField(default=0)
    lease_owner = models.CharField(
        max_length=200, blank=True, help_text="The worker process holding the row (host:pid)."
    )
    lease_expires_at = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="Running: when the holder's claim runs out unless renewed. Waiting: by when "
        "a worker should have picked it up.",
    )

    class Meta:
        abstract = True

    @property
    def lease_ran_out(self) -> bool:
        """Waiting or running past its deadline: its worker is presumed dead, or none came."""
        return self.lease_expires_at is not None and self.lease_expires_at < timezone.now()


class RunStatus(models.TextChoices):
    """Where a run is in its lifecycle (apps/llm/runs.py holds the moves between these)."""

    DRAFT = "draft", "Draft"
    RUNNING = "running", "Running"
    PAUSED = "paused", "Paused"
    CANCELLED = "cancelled", "Cancelled"
    BUDGET_REACHED = "budget_reached", "Stopped: budget reached"
    FINISHED = "finished", "Finished"


# A run in one of these states takes no new calls; RUNNING is the only state that does.
STOPPED_STATES = (RunStatus.PAUSED, RunStatus.CANCELLED, RunStatus.BUDGET_REACHED)


def run_seed() -> int:
    """A fresh run's seed: every call's seed is derived from it and the row (`call_seed`)."""
    return secrets.randbelow(2**31)


class Run(Batched):
    """What every run has, whatever its rows are (answers to sample, answers to grade,
    surveys to answer as a proxy, posts to rewrite): a status that only the lifecycle in
    apps/llm/runs.py moves, the pinned prompt version its calls are made with, the seed
    each call's seed derives from, an optional budget, who made it and when it ran."""

    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.DRAFT)
    prompt = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")
    seed = models.BigIntegerField(
        default=run_seed, help_text="Each call's seed is derived from it and the row."
    )
    budget_usd = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="The most the run may spend; empty: no limit.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(Batched.Meta):
        abstract = True
        ordering = ["-created_at"]
