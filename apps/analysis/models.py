"""What the reports keep: bootstrap intervals, which take seconds to compute and are kept
until the data they were computed from changes. A study's survey report and, for an answer
study, its answer-study report keep theirs in the same table, told apart by `report`."""

from django.conf import settings
from django.db import models

from apps.surveys.models import Study

# The bootstrap a survey report asks for (apps/analysis/survey.py): 1,000 resamples from a
# fixed seed. Here, not beside the statistics, so that the pages and the API find a study's
# kept intervals without importing numpy and pandas.
RESAMPLES = 1000
SEED = 0


class BootstrapStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class BootstrapReport(models.TextChoices):
    SURVEY = "survey", "Survey report"
    ANSWERS = "answers", "Answer-study report"


class SurveyBootstrap(models.Model):
    """The bootstrap intervals of a study's report, for the study's data as of `fingerprint`
    (apps.analysis.survey_data.survey_fingerprint, or answer_study_data's for the answer-study
    report): valid while the study's fingerprint is the same; a change to the data shows the
    report without them until asked again."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="+")
    report = models.CharField(
        max_length=10,
        choices=BootstrapReport.choices,
        default=BootstrapReport.SURVEY,
        help_text="Which of the study's reports the intervals are for.",
    )
    fingerprint = models.CharField(max_length=64)
    resamples = models.PositiveIntegerField(default=1000)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(
        max_length=10, choices=BootstrapStatus.choices, default=BootstrapStatus.QUEUED
    )
    done = models.PositiveIntegerField(default=0, help_text="Statistics computed so far.")
    total = models.PositiveIntegerField(default=0, help_text="Statistics to compute.")
    intervals = models.JSONField(
        default=dict, blank=True, help_text="key -> [low, high, resamples used, undefined]."
    )
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "report", "fingerprint", "resamples", "seed"],
                name="bootstrap_once_per_report",
            )
        ]

    def __str__(self):
        return f"Bootstrap of study {self.study_id}'s {self.get_report_display()} ({self.status})"

    @property
    def percent(self) -> float:
        return 100 * self.done / self.total if self.total else 0.0
