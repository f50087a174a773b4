from django.db import models
from django.db.models import Q

from apps.llm.leases import LeaseStates
from apps.llm.models import CallStatus, Leased, ModelConfig, Run
from apps.questions.models import Question


class RunKind(models.TextChoices):
    BENCHMARK = "benchmark", "Benchmark sampling run"
    # One run of this kind collects the answers generated on demand for the rubric editor;
    # its models are the configured set of reference models.
    REFERENCE = "reference", "Reference answers (on demand)"


class SamplingRun(Run):
    """Questions x models x samples, answered with one pinned prompt version."""

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=RunKind.choices, default=RunKind.BENCHMARK)
    model_configs = models.ManyToManyField(
        ModelConfig,
        related_name="sampling_runs",
        verbose_name="models",
        help_text="For the reference run: the models whose answers the rubric editor shows.",
    )
    questions = models.ManyToManyField(Question, blank=True, related_name="sampling_runs")
    samples_per_item = models.PositiveSmallIntegerField(default=1)
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text="Parameters sent with every call, over the model's own; "
        "empty: the provider's defaults.",
    )
    selection = models.JSONField(
        default=dict, blank=True, help_text="How the questions were chosen (topics, strata)."
    )

    class Meta(Run.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["kind"], condition=Q(kind=RunKind.REFERENCE), name="one_reference_run"
            ),
            models.CheckConstraint(condition=Q(samples_per_item__gte=1), name="run_samples_min_1"),
        ]

    def __str__(self):
        return self.name


class ResponseStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


# The states the bulk engine moves a response through (apps/llm/leases.py).
LEASE_STATES = LeaseStates(
    waiting=ResponseStatus.PENDING, running=ResponseStatus.RUNNING, failed=ResponseStatus.FAILED
)


class Response(Leased):
    """One model's answer to one question, in one run, for one sample index. A worker holds
    it under a lease (apps/llm/leases.py) while it asks the model."""

    run = models.ForeignKey(SamplingRun, on_delete=models.CASCADE, related_name="responses")
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="responses")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="responses")
    sample_index = models.PositiveSmallIntegerField(default=0)
    seed = models.BigIntegerField(null=True, blank=True, help_text="Sent with the call.")
    status = models.CharField(
        max_length=10, choices=ResponseStatus.choices, default=ResponseStatus.PENDING
    )
    text = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    reserved_usd = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="The cost held against the run's budget while the call is made.",
    )
    error_kind = models.CharField(max_length=20, choices=CallStatus.choices, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "question", "model", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "model", "question", "sample_index"], name="response_unique_item"
            )
        ]
        indexes = [
            models.Index(fields=["question", "status"], name="response_question_status"),
            models.Index(fields=["run", "status"], name="response_run_status"),
        ]

    def __str__(self):
        return f"{self.model} on {self.question} #{self.sample_index}"
