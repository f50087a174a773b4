"""Answer studies: which of a sampling run's answers a study shows, and how they were drawn.

The study, its units (each a `surveys.StudyScenario` holding a copy of the text shown), its
items and its participants are the surveys app's; the rows here tie each unit to the benchmark
answers it shows, so the report can set people's ratings beside the rubric score and the
auto-rater's verdicts on the same answers.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from apps.grading.models import GradingRun
from apps.rubrics.models import SharedCriterion
from apps.runs.models import Response, SamplingRun
from apps.surveys.models import Study, StudyScenario, SurveyItem


class AnswerDraw(models.Model):
    """How a study's answers were drawn from a sampling run: stratified by model, topic and
    score band (the grading run's scores), seeded, so the same settings draw the same answers."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="answer_draw")
    sampling_run = models.ForeignKey(SamplingRun, on_delete=models.PROTECT, related_name="+")
    grading_run = models.ForeignKey(
        GradingRun,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Its scores give each answer's band; its verdicts are the auto-rater's.",
    )
    seed = models.BigIntegerField()
    answers_per_stratum = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(0), MaxValueValidator(1000)]
    )
    pairs_per_model_pair = models.PositiveSmallIntegerField(
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1000)],
        help_text="Pairs drawn for each two models (the same question, one answer of each).",
    )
    strata = models.JSONField(
        default=list,
        help_text="Each stratum (model, topic, band) with the answers it had and those drawn.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Answers of {self.sampling_run} drawn for {self.study}"


class StudyAnswer(models.Model):
    """A study unit that shows one benchmark answer."""

    unit = models.OneToOneField(
        StudyScenario, on_delete=models.CASCADE, related_name="study_answer"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    band = models.CharField(max_length=20, help_text="The score band it was drawn from.")
    score = models.FloatField(null=True, blank=True, help_text="Its rubric score when drawn.")

    class Meta:
        ordering = ["unit_id"]

    def __str__(self):
        return f"{self.unit} shows answer {self.response_id}"


class StudyPair(models.Model):
    """A study unit that shows two models' answers to one question, A first."""

    unit = models.OneToOneField(StudyScenario, on_delete=models.CASCADE, related_name="study_pair")
    response_a = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    response_b = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["unit_id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(response_a=F("response_b")), name="pair_of_two_answers"
            )
        ]

    def __str__(self):
        return f"{self.unit} compares answers {self.response_a_id} and {self.response_b_id}"


class CriterionItem(models.Model):
    """A survey item that puts a shared presentation criterion to non-experts. The wording is
    the researcher's (the item's, versioned with the study's items); `prefilled` keeps what
    it started as, from the criterion."""

    item = models.OneToOneField(SurveyItem, on_delete=models.CASCADE, related_name="criterion_item")
    criterion = models.ForeignKey(SharedCriterion, on_delete=models.PROTECT, related_name="+")
    prefilled = models.TextField(help_text="The wording first offered, from the criterion.")

    class Meta:
        ordering = ["item_id"]

    def __str__(self):
        return f"{self.item.code} from shared criterion {self.criterion_id}"
