"""Answer studies in the researcher's console: how each study's answers were drawn and which
answers each unit shows, to read and export (the study itself is under Surveys)."""

from django.contrib import admin

from apps.console.sites import ReadOnlyAdmin

from .models import AnswerDraw, CriterionItem, StudyAnswer, StudyPair


@admin.register(AnswerDraw)
class AnswerDrawAdmin(ReadOnlyAdmin):
    list_display = (
        "study",
        "sampling_run",
        "grading_run",
        "seed",
        "answers_per_stratum",
        "pairs_per_model_pair",
        "created_at",
    )
    list_select_related = ("study", "sampling_run", "grading_run")
    csv_fields = (
        "id",
        "study_id",
        "study__name",
        "sampling_run_id",
        "grading_run_id",
        "seed",
        "answers_per_stratum",
        "pairs_per_model_pair",
        "strata",
        "created_by__username",
        "created_at",
    )


@admin.register(StudyAnswer)
class StudyAnswerAdmin(ReadOnlyAdmin):
    list_display = ("unit", "response", "band", "score")
    list_filter = ("band", "unit__study")
    list_select_related = ("unit", "response")
    csv_fields = (
        "id",
        "unit_id",
        "unit__study_id",
        "unit__label",
        "response_id",
        "response__model__display_name",
        "response__question__external_id",
        "band",
        "score",
    )


@admin.register(StudyPair)
class StudyPairAdmin(ReadOnlyAdmin):
    list_display = ("unit", "response_a", "response_b")
    list_filter = ("unit__study",)
    list_select_related = ("unit", "response_a", "response_b")
    csv_fields = (
        "id",
        "unit_id",
        "unit__study_id",
        "unit__label",
        "response_a_id",
        "response_a__model__display_name",
        "response_b_id",
        "response_b__model__display_name",
        "response_a__question__external_id",
    )


@admin.register(CriterionItem)
class CriterionItemAdmin(ReadOnlyAdmin):
    list_display = ("item", "criterion", "prefilled")
    list_select_related = ("item", "criterion")
    csv_fields = (
        "id",
        "item_id",
        "item__study_id",
        "item__code",
        "item__wording",
        "criterion_id",
        "criterion__criterion_set__version",
        "criterion__text",
        "prefilled",
    )
