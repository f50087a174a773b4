"""Rubrics in the researcher's console: read and export everything; change only settings.

Rubrics, criteria, reviews and history are written through the editor's services (which
keep versions immutable and count revisions), so the console shows them read-only.
"""

from django.contrib import admin

from apps.console.sites import ReadOnlyAdmin, ReadOnlyInline

from .models import (
    AuthoringSettings,
    Criterion,
    DraftJob,
    QuestionAssignment,
    ReviewComment,
    Rubric,
    RubricEvent,
    RubricImport,
    SharedCriterion,
    SharedCriterionSet,
    Suggestion,
    TopicClaiming,
)


class CriterionInline(ReadOnlyInline):
    model = Criterion
    fields = ("order", "text", "polarity", "kind", "points", "origin")


@admin.register(Rubric)
class RubricAdmin(ReadOnlyAdmin):
    list_display = ("question", "version", "state", "approved_by", "verified_at", "updated_at")
    list_filter = ("state", "question__topic")
    search_fields = ("question__external_id",)
    list_select_related = ("question", "approved_by")
    inlines = [CriterionInline]


@admin.register(Criterion)
class CriterionAdmin(ReadOnlyAdmin):
    list_display = ("rubric", "order", "text", "polarity", "kind", "points", "origin")
    list_filter = ("polarity", "kind", "origin", "rubric__state")
    search_fields = ("text", "rubric__question__external_id")
    list_select_related = ("rubric__question",)


@admin.register(ReviewComment)
class ReviewCommentAdmin(ReadOnlyAdmin):
    list_display = ("rubric", "author", "criterion_text", "body", "created_at", "resolved_at")
    search_fields = ("body", "rubric__question__external_id")
    list_select_related = ("rubric__question", "author")


@admin.register(RubricEvent)
class RubricEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "rubric", "actor", "action", "revision", "summary")
    list_filter = ("action",)
    search_fields = ("rubric__question__external_id", "summary")
    list_select_related = ("rubric__question", "actor")
    date_hierarchy = "created_at"


class SharedCriterionInline(ReadOnlyInline):
    model = SharedCriterion
    fields = ("order", "text", "polarity", "points")


@admin.register(SharedCriterionSet)
class SharedCriterionSetAdmin(ReadOnlyAdmin):
    """Publish new versions on the Shared presentation criteria page (rubrics/shared/)."""

    list_display = ("version", "created_by", "created_at", "notes")
    inlines = [SharedCriterionInline]


@admin.register(SharedCriterion)
class SharedCriterionAdmin(ReadOnlyAdmin):
    """The presentation criteria every rubric carries, by published set."""

    list_display = ("criterion_set", "order", "text", "polarity", "points")
    list_filter = ("criterion_set", "polarity")
    search_fields = ("text",)
    list_select_related = ("criterion_set",)
    csv_fields = ("id", "criterion_set__version", "order", "text", "polarity", "points")


@admin.register(QuestionAssignment)
class QuestionAssignmentAdmin(ReadOnlyAdmin):
    list_display = ("question", "author", "reviewer", "claimed", "assigned_by", "updated_at")
    list_filter = ("claimed", "question__topic")
    list_select_related = ("question", "author", "reviewer", "assigned_by")


@admin.register(TopicClaiming)
class TopicClaimingAdmin(ReadOnlyAdmin):
    list_display = ("topic", "open", "default_reviewer")


@admin.register(AuthoringSettings)
class AuthoringSettingsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "draft_model")

    def has_add_permission(self, request):
        return not AuthoringSettings.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DraftJob)
class DraftJobAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "rubric", "model", "prompt", "status", "attempts", "left_out")
    list_filter = ("status", "model")
    list_select_related = ("rubric__question", "model", "prompt")


@admin.register(Suggestion)
class SuggestionAdmin(ReadOnlyAdmin):
    list_display = ("rubric", "text", "polarity", "kind", "points", "status", "decided_by")
    list_filter = ("status", "polarity", "kind")
    list_select_related = ("rubric__question", "decided_by")


@admin.register(RubricImport)
class RubricImportAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "filename", "format", "uploaded_by", "committed_at")
    list_filter = ("format",)
    exclude = ("content",)
