from django.contrib import admin, messages
from django.shortcuts import redirect, render
from django.urls import path, reverse

from apps.console.sites import ReadOnlyAdmin

from .errors import SurveyError
from .forms import ImportForm
from .models import (
    Answer,
    Assignment,
    PageTime,
    Participant,
    ProxyCall,
    ProxyRun,
    ResponseGeneration,
    Scenario,
    ScenarioResponse,
    ScenarioResponseCall,
    Study,
    StudyScenario,
    StudySimulation,
    SurveyItem,
)
from .pseudonyms import pseudonym, pseudonym_sql
from .selectors import study_items_frozen
from .services import participant_mark_returned, survey_file_import, survey_item_save


@admin.register(Scenario)
class ScenarioAdmin(ReadOnlyAdmin):
    """Kept verbatim; added through the import page, which checks every record. A scenario
    that no study uses may be deleted (PROTECT keeps the ones in use)."""

    deletable = True

    list_display = ("name", "user_name", "final_action", "imported_at")
    search_fields = ("name", "task")
    readonly_fields = [f.name for f in Scenario._meta.fields]
    change_list_template = "admin/surveys/scenario_changelist.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="surveys_scenario_import"), *super().get_urls()]

    def import_view(self, request):
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]  # its size was checked before it is read
            try:
                note = survey_file_import(
                    kind=form.cleaned_data["kind"],
                    text=upload.read(),
                    filename=upload.name,
                    study=form.cleaned_data["study"],
                    user=request.user,
                )
            except SurveyError as exc:
                form.add_error("file", str(exc))
            else:
                self.message_user(request, note, messages.SUCCESS)
                return redirect(reverse("admin:surveys_scenario_changelist"))
        context = {**self.admin_site.each_context(request), "form": form, "title": "Import"}
        return render(request, "admin/surveys/import.html", context)


@admin.register(ScenarioResponse)
class ScenarioResponseAdmin(ReadOnlyAdmin):
    deletable = True
    list_display = ("scenario", "model_name", "prompt_version", "source", "offline", "created_at")
    list_filter = ("source", "offline", "model_name")
    search_fields = ("scenario__name", "text")
    readonly_fields = [f.name for f in ScenarioResponse._meta.fields]


@admin.register(ResponseGeneration)
class ResponseGenerationAdmin(ReadOnlyAdmin):
    """Requests to generate a study's responses, with who holds them and how often they were
    tried: where a researcher looks when a generation stalls."""

    list_display = (
        "study",
        "model",
        "status",
        "attempts",
        "lease_owner",
        "lease_expires_at",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "batch_mode", "batch_retry")
    search_fields = ("study__name", "error")
    readonly_fields = [f.name for f in ResponseGeneration._meta.fields]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "status", "scenarios_per_participant", "ratings_per_scenario")
    list_filter = ("status",)
    readonly_fields = ("status", "created_by", "created_at")

    def has_add_permission(self, request):
        return False  # /studies/new/ copies the default items and scenarios


@admin.register(StudySimulation)
class StudySimulationAdmin(ReadOnlyAdmin):
    """What made a demo study's made-up data, as the demo recorded it; its report shows it."""

    list_display = ("study", "recorded_at")
    list_select_related = ("study",)


@admin.register(SurveyItem)
class SurveyItemAdmin(admin.ModelAdmin):
    list_display = (
        "code",
        "study",
        "kind",
        "group",
        "attention_check",
        "explanation_required",
        "order",
    )
    list_filter = ("study", "attention_check")
    fields = (
        "study",
        "code",
        "wording",
        "kind",
        "scale_labels",
        "explanation_required",
        "group",
        "order",
        "attention_check",
        "expected_value",
        "on_page",
    )

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and (obj.study is None or study_items_frozen(study=obj.study)):
            return self.fields  # the defaults change by migration; answered items never
        return ()

    def save_model(self, request, obj, form, change):
        try:
            survey_item_save(item=obj)
        except SurveyError as exc:
            self.message_user(request, f"Not saved: {exc}", messages.ERROR)

    def has_delete_permission(self, request, obj=None):
        return obj is None or (obj.study is not None and not study_items_frozen(study=obj.study))


# The column every export shows in place of a participant's Prolific ids.
PSEUDONYM = ("participant pseudonym", "participant_pseudonym")


def _with_pseudonym(queryset, participant: str):
    """`queryset` with its rows' participant's pseudonym, `participant` the path to them."""
    return queryset.annotate(
        participant_pseudonym=pseudonym_sql(
            f"{participant}__study_id", f"{participant}__prolific_pid"
        )
    )


@admin.action(description="Mark returned (frees their scenarios)")
def mark_returned(modeladmin, request, queryset):
    for participant in queryset:
        try:
            participant_mark_returned(participant=participant)
        except SurveyError as exc:
            modeladmin.message_user(request, f"{participant}: {exc}", messages.ERROR)


@admin.register(Participant)
class ParticipantAdmin(ReadOnlyAdmin):
    deletable = True  # with their assignments and answers
    list_display = (
        "__str__",
        "study",
        "kind",
        "simulated",
        "status",
        "review_status",
        "attention_failed",
        "finished_at",
    )
    list_filter = ("study", "status", "review_status", "kind", "simulated")
    search_fields = ("prolific_pid", "prolific_session_id")
    actions = [mark_returned]
    # Researchers see PIDs on the list (they run the study); the CSV carries the pseudonym.
    csv_fields = (
        "id",
        "study_id",
        "kind",
        "simulated",
        "model__display_name",
        "run_index",
        PSEUDONYM,
        "prolific_study_id",
        "status",
        "attention_failed",
        "completion_code",
        "age",
        "gender",
        "education",
        "income",
        "review_status",
        "rejection_category",
        "created_at",
        "consented_at",
        "finished_at",
    )

    def csv_queryset(self, queryset):
        return queryset.annotate(participant_pseudonym=pseudonym_sql("study_id", "prolific_pid"))


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = (
        "participant",
        "study_scenario",
        "position",
        "status",
        "reserved_until",
        "completed_at",
    )
    list_filter = ("status", "study_scenario__study")
    list_select_related = ("participant__model", "study_scenario__scenario")
    raw_id_fields = ("participant", "study_scenario")
    show_full_result_count = False
    csv_fields = (
        "id",
        PSEUDONYM,
        "participant__kind",
        "participant__simulated",
        "participant__model__display_name",
        "participant__run_index",
        "study_scenario__study_id",
        "study_scenario__scenario__name",
        ("unit kind", "study_scenario__kind"),
        ("unit label", "study_scenario__label"),
        "position",
        "status",
        "reserved_at",
        "reserved_until",
        "answered_at",
        "completed_at",
    )

    def csv_queryset(self, queryset):
        return _with_pseudonym(queryset, "participant")


@admin.register(Answer)
class AnswerAdmin(ReadOnlyAdmin):
    list_display = ("participant", "scenario", "position", "item", "value", "saved_at")
    list_filter = ("item__code", "assignment__study_scenario__study", "assignment__status")
    list_select_related = (
        "assignment__participant__model",
        "assignment__study_scenario__scenario",
        "item",
    )
    show_full_result_count = False
    csv_fields = (
        "id",
        PSEUDONYM,
        "assignment__participant__kind",
        "assignment__participant__simulated",
        "assignment__participant__model__display_name",
        "assignment__participant__run_index",
        "assignment__study_scenario__study_id",
        "assignment__study_scenario__scenario__name",
        ("unit kind", "assignment__study_scenario__kind"),
        ("unit label", "assignment__study_scenario__label"),
        "assignment__status",
        "item__code",
        "value",
        "explanation",
        "first_saved_at",
        "saved_at",
        "save_count",
    )

    def csv_queryset(self, queryset):
        return _with_pseudonym(queryset, "assignment__participant")

    # The assignment, which is a participant's scenario at a place in their survey, shown as
    # those three (its own name is the Prolific ID and the place).
    @admin.display(description="participant")
    def participant(self, answer):
        person = answer.assignment.participant
        if not person.prolific_pid:
            return f"{person.model} #{person.run_index}"
        return pseudonym(study_id=person.study_id, prolific_pid=person.prolific_pid)

    @admin.display(description="unit", ordering="assignment__study_scenario__scenario__name")
    def scenario(self, answer):
        return answer.assignment.study_scenario.name

    @admin.display(description="place in the survey", ordering="assignment__position")
    def position(self, answer):
        return answer.assignment.position


@admin.register(PageTime)
class PageTimeAdmin(ReadOnlyAdmin):
    """When each participant saw each page and submitted it: how long the survey took."""

    list_display = ("participant", "page", "assignment", "shown_at", "submitted_at")
    list_filter = ("page", "participant__study", "participant__kind")
    list_select_related = ("participant__model", "assignment")
    raw_id_fields = ("participant", "assignment")
    show_full_result_count = False
    csv_fields = (
        "id",
        PSEUDONYM,
        "participant__kind",
        "participant__simulated",
        "participant__study_id",
        "page",
        "assignment_id",
        "assignment__study_scenario__scenario__name",
        ("unit kind", "assignment__study_scenario__kind"),
        ("unit label", "assignment__study_scenario__label"),
        "assignment__position",
        "shown_at",
        "submitted_at",
    )

    def csv_queryset(self, queryset):
        return _with_pseudonym(queryset, "participant")


@admin.register(StudyScenario)
class StudyScenarioAdmin(ReadOnlyAdmin):
    """A study's units: the scenarios it shows, each with the response participants rate (made
    on the study's page); or, in a study of answers, its answers and pairs of answers, each
    named by its label (never its model) and holding the texts participants read."""

    list_display = ("study", "name", "kind", "response", "response_error")
    list_filter = ("study", "kind")
    search_fields = ("scenario__name", "label")
    list_select_related = ("study", "scenario", "response")
    csv_fields = (
        "id",
        "study_id",
        "study__name",
        "kind",
        "scenario__name",
        "label",
        "question_text",
        "answer_text",
        "answer_b_text",
        "response_id",
        "response__model_name",
        "response__prompt_version",
        "response__offline",
        "response_error",
    )


@admin.register(ScenarioResponseCall)
class ScenarioResponseCallAdmin(ReadOnlyAdmin):
    """One call of a response generation: a scenario's response asked of a model."""

    list_display = (
        "generation",
        "study_scenario",
        "status",
        "error_kind",
        "cost_usd",
        "attempts",
        "completed_at",
    )
    list_filter = ("status", "error_kind", "generation__study")
    search_fields = ("study_scenario__scenario__name", "error")
    list_select_related = ("generation__study", "study_scenario__scenario")
    raw_id_fields = ("generation", "study_scenario", "response")
    csv_fields = (
        "id",
        "generation_id",
        "generation__study_id",
        "generation__model__display_name",
        "study_scenario__scenario__name",
        ("unit kind", "study_scenario__kind"),
        ("unit label", "study_scenario__label"),
        "status",
        "seed",
        "response_id",
        "error_kind",
        "error",
        "cost_usd",
        "attempts",
        "started_at",
        "completed_at",
    )


@admin.register(ProxyRun)
class ProxyRunAdmin(ReadOnlyAdmin):
    """Made, launched and stopped on the study's proxy page (/studies/<id>/proxies/)."""

    list_display = (
        "pk",
        "study",
        "prompt",
        "runs_per_model",
        "temperature",
        "status",
        "budget_usd",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "batch_mode", "batch_retry", "study")
    list_select_related = ("study", "prompt")
    csv_fields = (
        "id",
        "study_id",
        "study__name",
        "prompt__purpose",
        "prompt__version",
        "runs_per_model",
        "temperature",
        "seed",
        "budget_usd",
        "batch_mode",
        "batch_retry",
        "status",
        "created_by__username",
        "created_at",
        "launched_at",
        "finished_at",
    )


@admin.register(ProxyCall)
class ProxyCallAdmin(ReadOnlyAdmin):
    """One proxy participant asked about one scenario (every item in one call)."""

    list_display = (
        "pk",
        "run",
        "participant",
        "study_scenario",
        "status",
        "error_kind",
        "cost_usd",
        "attempts",
        "completed_at",
    )
    list_filter = ("status", "error_kind", "run")
    search_fields = ("study_scenario__scenario__name", "study_scenario__label", "error")
    list_select_related = ("run", "participant__model", "study_scenario__scenario")
    raw_id_fields = ("participant", "study_scenario")
    show_full_result_count = False
    csv_fields = (
        "id",
        "run_id",
        "participant_id",
        "participant__model__display_name",
        "participant__run_index",
        "study_scenario__scenario__name",
        ("unit kind", "study_scenario__kind"),
        ("unit label", "study_scenario__label"),
        "position",
        "status",
        "seed",
        "error_kind",
        "error",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "attempts",
        "started_at",
        "completed_at",
    )
