from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from apps.console.uploads import upload_size_validate

from .errors import QuestionError
from .interchange import MAX_FILE_BYTES
from .models import Question, Topic
from .selectors import question_text_frozen_because
from .services import normalise_newlines, question_update, questions_import


class QuestionFileForm(forms.Form):
    file = forms.FileField(
        label="assay-questions/1 JSON file",
        help_text="Every question is imported, or none: a file with any problem is refused "
        "whole, with each problem named.",
    )

    def clean_file(self):
        return upload_size_validate(self.cleaned_data["file"], max_bytes=MAX_FILE_BYTES)


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "order")

    def has_add_permission(self, request):
        return False  # the nine topics are the study's design, seeded by a migration

    def has_delete_permission(self, request, obj=None):
        return False


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


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    form = QuestionForm
    list_display = ("external_id", "topic", "need_type", "length_bucket", "created_at")
    list_filter = ("topic", "need_type", "length_bucket", "mentions_prior_attempt")
    search_fields = ("external_id", "text")
    # Labels, provenance and metrics change through the bank's pages (their services).
    readonly_fields = (
        "created_at", "label_status", "source_post", "rewrite", "rewrite_approved_by",
        "rewrite_approved_at", "rewrite_cosine", "rewrite_trigram_overlap",
    )  # fmt: skip
    raw_id_fields = ("labelled_by", "verified_by")
    change_list_template = "admin/questions/question/change_list.html"

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
