from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.llm.models import Leased, ModelConfig, PromptTemplate
from apps.questions.models import Question


class RunKind(models.TextChoices):
    BENCHMARK = "benchmark", "Benchmark sampling run"
    # One run of this kind collects the answers generated on demand for the rubric editor;
    # its models are the configured set of reference models.
    REFERENCE = "reference", "Reference answers (on demand)"


class RunStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    RUNNING = "running", "Running"
    PAUSED = "paused", "Paused"
    CANCELLED = "cancelled", "Cancelled"
    FINISHED = "finished", "Finished"


class SamplingRun(models.Model):
    """Questions x models x samples, answered with one pinned prompt version."""

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=RunKind.choices, default=RunKind.BENCHMARK)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.DRAFT)
    prompt = models.ForeignKey(
        PromptTemplate, on_delete=models.PROTECT, related_name="sampling_runs",
        help_text="The sample prompt version every answer of this run is generated with.",
    )  # fmt: skip
    model_configs = models.ManyToManyField(
        ModelConfig, related_name="sampling_runs", verbose_name="models",
        help_text="For the reference run: the models whose answers the rubric editor shows.",
    )  # fmt: skip
    questions = models.ManyToManyField(Question, blank=True, related_name="sampling_runs")
    samples_per_item = models.PositiveSmallIntegerField(default=1)
    budget_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
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


class Response(Leased):
    """One model's answer to one question, in one run, for one sample index. A worker holds
    it under a lease (apps/llm/leases.py) while it asks the model."""

    run = models.ForeignKey(SamplingRun, on_delete=models.CASCADE, related_name="responses")
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="responses")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="responses")
    sample_index = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(
        max_length=10, choices=ResponseStatus.choices, default=ResponseStatus.PENDING
    )
    text = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
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
        indexes = [models.Index(fields=["question", "status"], name="response_question_status")]

    def __str__(self):
        return f"{self.model} on {self.question} #{self.sample_index}"
