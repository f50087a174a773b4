from django import forms
from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.db import connection
from django.db.models.constants import LOOKUP_SEP
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from apps.console.sites import ReadOnlyAdmin

from .errors import QuestionError
from .forms import PostFileForm, QuestionFileForm, TopicForm
from .models import (
    EmbeddingCosine,
    EmbeddingCosineJob,
    ExclusionReason,
    ImportBatch,
    Question,
    QuestionLabel,
    QuotaSettings,
    Rewrite,
    RewriteJob,
    Sample,
    SampledPost,
    ScreeningDecision,
    ScreeningWithdrawal,
    SourcePost,
    SourcePostTopic,
    Topic,
)
from .selectors import question_text_frozen_because
from .selectors.bank import with_cosine_method
from .selectors.embedding_cosines import embedding_cosines_with_method
from .selectors.imports import import_progress, import_title
from .selectors.screening import decisions_shown_to
from .selectors.strata import LABELS, labels_as_shown, labels_blind_to
from .selectors.topics import topic_in_use
from .services import normalise_newlines, question_update, questions_import
from .services.imports import posts_upload
from .services.topics import topic_save


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    """Researchers add topics and rename them; the slug is made from the first name and kept
    (links and exports use it), and a topic in use is never deleted."""

    form = TopicForm
    list_display = ("name", "slug", "order")
    list_editable = ("order",)
    readonly_fields = ("slug",)

    def save_model(self, request, obj, form, change):
        topic_save(topic=obj)

    def has_delete_permission(self, request, obj=None):
        if obj is None or not super().has_delete_permission(request, obj):
            return False
        return not topic_in_use(topic=obj)


@admin.register(ExclusionReason)
class ExclusionReasonAdmin(admin.ModelAdmin):
    """The reasons screeners may give: reorder, rename, or deactivate (a reason a decision
    gave stays, so that the decision still says why)."""

    list_display = ("text", "order", "active")
    list_editable = ("order", "active")
    list_filter = ("active",)

    def has_delete_permission(self, request, obj=None):
        if obj is None or not super().has_delete_permission(request, obj):
            return False
        return not ScreeningDecision.objects.filter(reason=obj).exists()


@admin.register(QuotaSettings)
class QuotaSettingsAdmin(admin.ModelAdmin):
    """The bank's one row of targets: edited, never added or deleted."""

    list_display = ("target_per_topic", "minimum_per_stratum")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        row = QuotaSettings.objects.order_by("pk").first()
        if row is None:
            return super().changelist_view(request, extra_context)
        return redirect(reverse("admin:questions_quotasettings_change", args=[row.pk]))


UNCOUNTED_FROM = 10_000


class EstimatedCountPaginator(Paginator):
    """The unfiltered pool is millions of rows (and its topics more): its page count comes
    from the planner's estimate rather than a COUNT(*) over the table. A search or a filter
    is counted."""

    @cached_property
    def count(self):
        query = self.object_list.query
        if query.where:
            return super().count
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                [self.object_list.model._meta.db_table],
            )
            row = cursor.fetchone()
        estimate = row[0] if row else -1
        if estimate >= 0:
            return estimate
        # Never analysed yet (-1): count, but no further than a page count needs to be right.
        return self.object_list[:UNCOUNTED_FROM].count()


@admin.register(SourcePost)
class SourcePostAdmin(ReadOnlyAdmin):
    list_display = (
        "external_id",
        "subreddit",
        "title",
        "body_chars",
        "created_utc",
        "batch_id",
        "line",
    )
    search_fields = ("=external_id",)
    search_help_text = "An exact post id, such as t3_00000001."
    ordering = ("-id",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    fields = (
        "external_id",
        "subreddit",
        "title",
        "body",
        "created_utc",
        "topics",
        "body_chars",
        "batch",
        "line",
    )
    readonly_fields = fields

    @admin.display(description="topics")
    def topics(self, obj):
        names = dict(Topic.objects.values_list("pk", "name"))
        return ", ".join(names.get(pk, f"topic {pk}") for pk in obj.topic_ids)


@admin.register(ImportBatch)
class ImportBatchAdmin(ReadOnlyAdmin):
    list_display = (
        "filename",
        "status",
        "rows",
        "topics_shown",
        "who",
        "created_at",
        "finished_at",
        "problem_count",
    )
    list_filter = ("status", "file_format")
    search_fields = ("filename", "sha256")
    list_select_related = ("imported_by",)
    fields = (
        "filename",
        "file_format",
        "size_bytes",
        "sha256",
        "status",
        "rows",
        "topics_shown",
        "imported_by",
        "created_at",
        "finished_at",
        "problems_shown",
    )
    readonly_fields = fields
    change_list_template = "admin/questions/importbatch/change_list.html"

    @admin.display(description="posts per topic")
    def topics_shown(self, obj):
        return ", ".join(f"{name} {count:,}" for name, count in obj.topic_counts.items()) or "—"

    @admin.display(description="imported by", ordering="imported_by__username")
    def who(self, obj):
        user = obj.imported_by
        return (user.get_full_name() or user.get_username()) if user else "import_posts command"

    @admin.display(description="problems")
    def problem_count(self, obj):
        return len(obj.problems) or ""

    @admin.display(description="problems")
    def problems_shown(self, obj):
        if not obj.problems:
            return "—"
        items = format_html_join("", "<li>{}</li>", ((problem,) for problem in obj.problems))
        return format_html("<ul>{}</ul>", items)

    def get_urls(self):
        view = self.admin_site.admin_view
        progress = view(self.progress_view)
        return [
            path("upload/", view(self.upload_view), name="questions_importbatch_upload"),
            path("<int:pk>/progress/", progress, name="questions_importbatch_progress"),
            *super().get_urls(),
        ]

    def upload_view(self, request):
        form = PostFileForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            batch = posts_upload(upload=form.cleaned_data["file"], user=request.user)
            return redirect("admin:questions_importbatch_progress", pk=batch.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Import candidate posts",
        }
        return TemplateResponse(request, "admin/questions/importbatch/upload.html", context)

    def progress_view(self, request, pk: int):
        batch = get_object_or_404(ImportBatch.objects.select_related("imported_by"), pk=pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "batch": batch,
            "progress": import_progress(batch=batch),
            "title": import_title(batch=batch),
        }
        template = "admin/questions/importbatch/progress.html"
        if request.htmx:
            template += "#progress"
        return TemplateResponse(request, template, context)


class QuestionForm(forms.ModelForm):
    class Meta:
        model = Question
        fields = "__all__"  # noqa: DJ007 (the admin's fieldset; readonly_fields apply)

    def clean_text(self):
        text = normalise_newlines(self.cleaned_data["text"])
        if self.instance.pk is not None and text != self.instance.text:
            reason = question_text_frozen_because(question=self.instance)
            if reason:
                raise forms.ValidationError(reason)
        return text


class LabelFilter(admin.SimpleListFilter):
    """A strata label, yes or no, over the questions whose labels the researcher may read:
    a filter over labels still to verify would tell them what those labels are."""

    field = ""

    def lookups(self, request, model_admin):
        return (("1", "Yes"), ("0", "No"))

    def queryset(self, request, queryset):
        if self.value() not in ("0", "1"):
            return queryset
        shown = queryset.exclude(labels_blind_to(viewer=request.user))
        return shown.filter(**{self.field: self.value() == "1"})


def _label_filter(name: str) -> type[LabelFilter]:
    title = Question._meta.get_field(name).verbose_name
    return type(
        f"{name}_filter", (LabelFilter,), {"field": name, "parameter_name": name, "title": title}
    )


def _hidden(question: Question) -> bool:
    # Annotated by QuestionAdmin.get_queryset; a question read otherwise keeps its labels hidden.
    return getattr(question, "labels_hidden", True)


def _label_shown(name: str):
    @admin.display(description=Question._meta.get_field(name).verbose_name, boolean=True)
    def shown(self, obj):
        return None if _hidden(obj) else getattr(obj, name)

    shown.__name__ = f"{name}_shown"
    return shown


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    """Questions, and their strata labels where the researcher may read them: labels still
    to verify are shown to their labeller alone (labels_blind_to), in the list, its filters,
    the question's page and the export, as on the bank's pages."""

    form = QuestionForm
    list_display = (
        "external_id",
        "topic",
        "needs_sensemaking_shown",
        "needs_guidance_shown",
        "length_bucket",
        "created_at",
    )
    list_filter = (
        "topic",
        _label_filter("needs_sensemaking"),
        _label_filter("needs_guidance"),
        "length_bucket",
        _label_filter("mentions_prior_attempt"),
        "label_status",
    )
    search_fields = ("external_id", "text")
    # Labels, provenance and metrics change through the bank's pages (their services).
    readonly_fields = (
        "created_at",
        "label_status",
        "source_post",
        "rewrite",
        "rewrite_approved_by",
        "rewrite_approved_at",
        "rewrite_cosine",
        "rewrite_trigram_overlap",
    )
    raw_id_fields = ("labelled_by", "verified_by")
    change_list_template = "admin/questions/question/change_list.html"
    # Every column, and beside the TF-IDF cosine the method that made it; the labels as the
    # researcher may read them (get_queryset).
    csv_fields = tuple(
        column
        for field in Question._meta.concrete_fields
        for column in (
            (field.attname, ("rewrite_cosine_method", "rewrite_cosine_method"))
            if field.name == "rewrite_cosine"
            else ((field.name, f"{field.name}_shown"),)
            if field.name in LABELS
            else (field.attname,)
        )
    )
    needs_sensemaking_shown = _label_shown("needs_sensemaking")
    needs_guidance_shown = _label_shown("needs_guidance")

    def get_queryset(self, request):
        return labels_as_shown(super().get_queryset(request), viewer=request.user)

    def lookup_allowed(self, lookup, value, request=None):
        # The labels are filtered through LabelFilter alone, which leaves out labels still to
        # verify: a lookup in the query string (needs_guidance__exact=1) would not.
        if lookup.split(LOOKUP_SEP)[0] in LABELS and lookup not in LABELS:
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_exclude(self, request, obj=None):
        # The question's page leaves out labels the researcher may not read yet (and so
        # cannot change them either).
        exclude = super().get_exclude(request, obj) or ()
        if obj is not None and _hidden(obj):
            return (*exclude, *LABELS)
        return exclude

    def csv_queryset(self, queryset):
        return with_cosine_method(queryset)

    def save_model(self, request, obj, form, change):
        if not change:
            return super().save_model(request, obj, form, change)
        fields = {name: form.cleaned_data[name] for name in form.changed_data}
        try:
            question_update(question=obj, fields=fields)
        except QuestionError as exc:  # frozen since the form was checked
            self.message_user(request, str(exc), messages.ERROR)

    def get_urls(self):
        extra = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="questions_question_import",
            )
        ]
        return extra + super().get_urls()

    def import_view(self, request):
        if not self.has_add_permission(request):
            return redirect("admin:index")
        form = QuestionFileForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                report = questions_import(
                    content=upload.read(), filename=upload.name, user=request.user
                )
            except QuestionError as exc:
                form.add_error("file", str(exc))
            else:
                self.message_user(request, report.summary(), messages.SUCCESS)
                return redirect(reverse("admin:questions_question_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Import questions",
        }
        return TemplateResponse(request, "admin/questions/question/import.html", context)


@admin.register(SourcePostTopic)
class SourcePostTopicAdmin(ReadOnlyAdmin):
    """A post's topics, one row each (written by the import)."""

    list_display = ("post_id", "topic")
    list_filter = ("topic",)
    search_fields = ("=post__external_id",)
    search_help_text = "An exact post id, such as t3_00000001."
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    csv_fields = ("post_id", "post__external_id", "topic_id", "topic__name")


@admin.register(Sample)
class SampleAdmin(ReadOnlyAdmin):
    """Draws of posts for screening, made on the screening pages."""

    list_display = ("drawn_at", "topic", "size", "seed", "pool", "drawn_by")
    list_filter = ("topic",)
    list_select_related = ("topic", "drawn_by")
    csv_fields = ("id", "topic__name", "size", "seed", "pool", "drawn_by__username", "drawn_at")


@admin.register(SampledPost)
class SampledPostAdmin(ReadOnlyAdmin):
    list_display = ("post", "sample", "topic", "position", "outcome", "decisions_count")
    list_filter = ("outcome", "topic", "sample")
    search_fields = ("=post__external_id",)
    list_select_related = ("post", "sample__topic", "topic")
    raw_id_fields = ("post", "sample")
    csv_fields = (
        "id",
        "sample_id",
        "post__external_id",
        "topic__name",
        "position",
        "outcome",
        "decisions_count",
    )


@admin.register(ScreeningDecision)
class ScreeningDecisionAdmin(ReadOnlyAdmin):
    """Each screener's decisions: one on a post still being screened is shown to the
    screener who made it alone, so that the other's stays their own (decisions_shown_to);
    every decision once both are in. The list, its filters and search, a decision's page and
    the export read the same rows."""

    list_display = ("sampled", "researcher", "include", "reason", "decided_at")
    list_filter = ("include", "reason", "sampled__topic")
    search_fields = ("=sampled__post__external_id", "note")
    list_select_related = ("sampled__post", "sampled__sample__topic", "researcher", "reason")
    raw_id_fields = ("sampled",)
    csv_fields = (
        "id",
        "sampled__sample_id",
        "sampled__post__external_id",
        "sampled__topic__name",
        "researcher__username",
        "include",
        "reason__text",
        "note",
        "decided_at",
    )

    def get_queryset(self, request):
        return super().get_queryset(request).filter(decisions_shown_to(viewer=request.user))


@admin.register(ScreeningWithdrawal)
class ScreeningWithdrawalAdmin(ReadOnlyAdmin):
    """Decisions their screeners undid before the other screener decided, as they were;
    under the decisions' rule of who sees what (decisions_shown_to)."""

    list_display = ("sampled", "researcher", "include", "reason", "decided_at", "withdrawn_at")
    list_filter = ("include", "sampled__topic")
    search_fields = ("=sampled__post__external_id",)
    list_select_related = ("sampled__post", "sampled__sample__topic", "researcher", "reason")
    raw_id_fields = ("sampled",)
    csv_fields = (
        "id",
        "sampled__post__external_id",
        "researcher__username",
        "include",
        "reason__text",
        "note",
        "decided_at",
        "withdrawn_at",
    )

    def get_queryset(self, request):
        return super().get_queryset(request).filter(decisions_shown_to(viewer=request.user))


@admin.register(QuestionLabel)
class QuestionLabelAdmin(ReadOnlyAdmin):
    """Each labeller's, verifier's and resolver's strata labels, given on the bank's pages;
    labels still to verify are shown to their labeller alone (labels_blind_to)."""

    list_display = (
        "question",
        "stage",
        "researcher",
        "mentions_prior_attempt",
        "needs_sensemaking",
        "needs_guidance",
        "created_at",
    )
    list_filter = ("stage", "mentions_prior_attempt", "needs_sensemaking", "needs_guidance")
    search_fields = ("question__external_id",)
    list_select_related = ("question", "researcher")
    raw_id_fields = ("question",)
    csv_fields = (
        "id",
        "question__external_id",
        "stage",
        "researcher__username",
        "mentions_prior_attempt",
        "needs_sensemaking",
        "needs_guidance",
        "created_at",
    )

    def get_queryset(self, request):
        blind = Question.objects.filter(labels_blind_to(viewer=request.user))
        return super().get_queryset(request).exclude(question__in=blind)


@admin.register(RewriteJob)
class RewriteJobAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "model",
        "prompt",
        "status",
        "seed",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "batch_mode", "batch_retry", "model")
    list_select_related = ("model", "prompt", "created_by")
    csv_fields = (
        "id",
        "model__display_name",
        "prompt__purpose",
        "prompt__version",
        "seed",
        "batch_mode",
        "batch_retry",
        "status",
        "created_by__username",
        "created_at",
        "finished_at",
    )


@admin.register(Rewrite)
class RewriteAdmin(ReadOnlyAdmin):
    list_display = (
        "question",
        "job",
        "status",
        "error_kind",
        "cost_usd",
        "attempts",
        "completed_at",
    )
    list_filter = ("status", "error_kind", "job")
    search_fields = ("question__external_id", "text", "error")
    list_select_related = ("question", "job__model")
    raw_id_fields = ("question", "job")
    csv_fields = (
        "id",
        "job_id",
        "job__model__display_name",
        "question__external_id",
        "status",
        "text",
        "cost_usd",
        "latency_ms",
        "error_kind",
        "error",
        "attempts",
        "created_at",
        "started_at",
        "completed_at",
    )


@admin.register(EmbeddingCosineJob)
class EmbeddingCosineJobAdmin(ReadOnlyAdmin):
    """Cosines of embeddings asked for on the rewriting pages, one embedding model each."""

    list_display = ("pk", "model", "status", "created_by", "created_at", "finished_at")
    list_filter = ("status", "model")
    list_select_related = ("model", "created_by")
    csv_fields = (
        "id",
        "model__display_name",
        "model__litellm_model",
        "status",
        "created_by__username",
        "created_at",
        "started_at",
        "finished_at",
    )


@admin.register(EmbeddingCosine)
class EmbeddingCosineAdmin(ReadOnlyAdmin):
    """The cosine of the embeddings of each approved rewrite and its original, by model, or
    why there is none; the vectors are the LLM gateway's Embeddings."""

    list_display = ("question", "model", "status", "cosine", "error_kind", "computed_at")
    list_filter = ("status", "error_kind", "model")
    search_fields = ("question__external_id", "error")
    list_select_related = ("question", "model")
    raw_id_fields = ("question", "job", "original_embedding", "rewrite_embedding")
    csv_fields = (
        "id",
        "question__external_id",
        "model__display_name",
        "model__litellm_model",
        "job_id",
        "status",
        "cosine",
        ("method", "method"),
        "original_embedding_id",
        "rewrite_embedding_id",
        "error_kind",
        "error",
        "computed_at",
    )

    def csv_queryset(self, queryset):
        return embedding_cosines_with_method(queryset)
