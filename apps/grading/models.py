from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.llm.models import CallStatus, Leased, ModelConfig, PromptTemplate, Run, run_seed
from apps.questions.models import Question
from apps.rubrics.models import Criterion, Rubric
from apps.runs.models import Response, SamplingRun

USER = settings.AUTH_USER_MODEL


class GradingMode(models.TextChoices):
    PER_CRITERION = "per_criterion", "One call per criterion (as HealthBench)"
    CHECKLIST = "checklist", "One call per answer, every criterion (as the published rater)"


class GradingRun(Run):
    """An auto-rater's grading of a sampling run's answers, with one pinned grader, prompt
    version and mode. Regrading is a new grading run: it never resamples."""

    name = models.CharField(max_length=200)
    sampling_run = models.ForeignKey(
        SamplingRun, on_delete=models.PROTECT, related_name="grading_runs"
    )
    grader = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    mode = models.CharField(max_length=20, choices=GradingMode.choices)
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text="Parameters sent with every grader call; temperature 0 unless set otherwise.",
    )
    # Empty for a real run. The demo records here what made its answers, grades and
    # simulated expert grades (the offline provider's parameters), and its report shows it.
    simulation = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="What generated this run's simulated data: parts, each with its parameters.",
    )

    class Meta(Run.Meta):
        pass

    def __str__(self):
        return self.name


class CallState(models.TextChoices):
    """The state of a row that stands for a grader call."""

    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    # The grader's answer could not be used (after the bounded re-asks), or the call failed:
    # an explicit error, never "not met".
    ERROR = "error", "Error"


class GraderCall(Leased):
    """What a grader call costs and how it went: the fields shared by a per-criterion
    judgment and a checklist call, the two rows the engine claims in a grading run."""

    status = models.CharField(max_length=10, choices=CallState.choices, default=CallState.PENDING)
    raw_output = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    reserved_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error_kind = models.CharField(max_length=20, choices=CallStatus.choices, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class ChecklistCall(GraderCall):
    """One call that grades one answer against every criterion of its rubric (checklist
    mode); its verdicts become the answer's judgments."""

    grading_run = models.ForeignKey(
        GradingRun, on_delete=models.CASCADE, related_name="checklist_calls"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    reused_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The same grader, prompt, answer and rubric version, graded before.",
    )

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["grading_run", "response"], name="checklist_unique")
        ]
        indexes = [models.Index(fields=["grading_run", "status"], name="checklist_run_status")]


class Judgment(GraderCall):
    """The grader's verdict on one criterion for one answer, pinned to the rubric version
    graded. In per-criterion mode it is the row the engine claims; in checklist mode it is
    written from its checklist call's answer."""

    grading_run = models.ForeignKey(GradingRun, on_delete=models.CASCADE, related_name="judgments")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="judgments")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="judgments")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="judgments")
    checklist = models.ForeignKey(
        ChecklistCall, null=True, blank=True, on_delete=models.CASCADE, related_name="judgments"
    )
    met = models.BooleanField(null=True, blank=True)
    explanation = models.TextField(blank=True)
    reused_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["grading_run", "response", "criterion"], name="judgment_unique"
            ),
            models.CheckConstraint(
                condition=~Q(status=CallState.DONE) | Q(met__isnull=False),
                name="judgment_done_has_verdict",
            ),
        ]
        indexes = [
            models.Index(fields=["grading_run", "status"], name="judgment_run_status"),
            models.Index(fields=["grading_run", "response"], name="judgment_run_response"),
        ]


class ResponseScore(models.Model):
    """An answer's score in a grading run, computed from its judgments by the scoring rule
    (apps/rubrics/scoring.py) against the rubric version graded; absent while any judgment
    is pending or an error."""

    grading_run = models.ForeignKey(GradingRun, on_delete=models.CASCADE, related_name="scores")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="scores")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    earned_points = models.PositiveIntegerField()
    max_points = models.PositiveIntegerField()
    score = models.FloatField()
    breakdown = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["grading_run", "response"], name="score_unique"),
            models.CheckConstraint(
                condition=Q(score__gte=0, score__lte=1), name="score_in_unit_range"
            ),
        ]

    def __str__(self):
        return f"{self.response} in {self.grading_run}: {self.earned_points}/{self.max_points}"


class CalibrationSet(models.Model):
    """The expert-graded sample: for each question, one answer drawn at random (seeded)
    from a configured set of models, graded by the rubric's author and a second researcher
    and then adjudicated (the published protocol)."""

    name = models.CharField(max_length=200)
    sampling_run = models.ForeignKey(
        SamplingRun, on_delete=models.PROTECT, related_name="calibration_sets"
    )
    model_configs = models.ManyToManyField(ModelConfig, related_name="+", verbose_name="models")
    seed = models.BigIntegerField(default=run_seed)
    second_grader = models.ForeignKey(
        USER,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The researcher who grades every answer after its author and adjudicates.",
    )
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class CalibrationSample(models.Model):
    calibration_set = models.ForeignKey(
        CalibrationSet, on_delete=models.CASCADE, related_name="samples"
    )
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="+")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    author = models.ForeignKey(
        USER,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The rubric's author, who grades first.",
    )
    first_done_at = models.DateTimeField(null=True, blank=True)
    second_done_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["calibration_set", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["calibration_set", "question"], name="calibration_one_per_question"
            )
        ]

    def __str__(self):
        return f"{self.calibration_set}: {self.question}"


# The longest note a grader keeps with a label or a final label (the forms and columns say so).
NOTE_MAX_CHARS = 5_000


class ExpertJudgment(models.Model):
    """Two experts' labels of one criterion for one sampled answer, and the label they
    agreed on (`final_met`): the first two are kept as given."""

    sample = models.ForeignKey(
        CalibrationSample, on_delete=models.CASCADE, related_name="judgments"
    )
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="+")
    first_met = models.BooleanField(null=True, blank=True)
    first_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    first_note = models.TextField(blank=True, max_length=NOTE_MAX_CHARS)
    second_met = models.BooleanField(null=True, blank=True)
    second_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    second_note = models.TextField(blank=True, max_length=NOTE_MAX_CHARS)
    final_met = models.BooleanField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution_note = models.TextField(blank=True, max_length=NOTE_MAX_CHARS)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sample", "criterion__order", "criterion_id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "criterion"], name="expert_judgment_unique")
        ]

    def __str__(self):
        return f"{self.sample}: {self.criterion}"


class ExpertGradeWithdrawal(models.Model):
    """A grader's completed grade of a calibration answer, withdrawn by its grader (undo)
    before the other grade of the answer was in: the labels and notes as they stood, kept
    while the grade is reopened to be changed and saved again."""

    sample = models.ForeignKey(
        CalibrationSample, on_delete=models.CASCADE, related_name="withdrawals"
    )
    grader = models.ForeignKey(USER, on_delete=models.PROTECT, related_name="+")
    turn = models.CharField(
        max_length=6, choices=[("first", "Rubric author"), ("second", "Second grader")]
    )
    labels = models.JSONField(default=dict, help_text="{criterion id: met} as they stood.")
    notes = models.JSONField(default=dict, help_text="{criterion id: note} as they stood.")
    done_at = models.DateTimeField(help_text="When the withdrawn grade was completed.")
    withdrawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-withdrawn_at", "-pk"]

    def __str__(self):
        return f"{self.grader} withdrew a grade of {self.sample}"


class Calibration(models.Model):
    """A grading run held against a calibration set's final labels, for the grader, prompt
    version and rubric versions stated here (the page says when any changed since)."""

    calibration_set = models.ForeignKey(
        CalibrationSet, on_delete=models.CASCADE, related_name="calibrations"
    )
    grading_run = models.ForeignKey(
        GradingRun, on_delete=models.CASCADE, related_name="calibrations"
    )
    grader = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    prompt = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")
    rubric_ids = models.JSONField(default=list, help_text="The rubric versions it holds for.")
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["calibration_set", "grading_run"], name="calibration_unique"
            )
        ]

    def __str__(self):
        return f"{self.grading_run} against {self.calibration_set}"
