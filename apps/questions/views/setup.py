"""Setting up the question bank: importing candidate posts, following an import, importing
questions, and the bank's topics. The console keeps the same things for bulk edits and exports."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render

from apps.accounts.roles import Role, role_required

from ..errors import FormatError, QuestionError
from ..forms import PostFileForm, QuestionFileForm, TopicForm
from ..models import ImportBatch, Topic
from ..selectors.imports import import_progress, import_title
from ..selectors.topics import topic_in_use, topics_listed
from ..services import questions_import
from ..services.imports import posts_upload
from ..services.topics import topic_save

HISTORY_PAGE = 20


@role_required(Role.RESEARCHER)
def posts_import(request):
    """The upload form and every import so far; a good upload goes to its import's page."""
    posted = request.method == "POST"  # bound even when sent empty (no file chosen)
    form = PostFileForm(request.POST, request.FILES) if posted else PostFileForm()
    if posted and form.is_valid():
        batch = posts_upload(upload=form.cleaned_data["file"], user=request.user)
        return redirect("questions:setup-post-import", pk=batch.pk)
    batches = ImportBatch.objects.select_related("imported_by")
    page = Paginator(batches, HISTORY_PAGE).get_page(request.GET.get("page"))
    status = 422 if form.errors else 200
    context = {"form": form, "page": page}
    return render(request, "questions/setup_posts.html", context, status=status)


@role_required(Role.RESEARCHER)
def post_import(request, pk: int):
    """One import as it stands: polled while a worker imports it (the fragment alone)."""
    batch = get_object_or_404(ImportBatch.objects.select_related("imported_by"), pk=pk)
    context = {
        "batch": batch,
        "progress": import_progress(batch=batch),
        "title": import_title(batch=batch),
    }
    template = "questions/setup_post_import.html"
    if request.htmx:
        template += "#progress"
    return render(request, template, context)


@role_required(Role.RESEARCHER)
def questions_upload(request):
    """An `assay-questions/1` file of questions, imported whole or refused whole."""
    posted = request.method == "POST"
    form = QuestionFileForm(request.POST, request.FILES) if posted else QuestionFileForm()
    refused = None
    if posted and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            report = questions_import(
                content=upload.read(), filename=upload.name, user=request.user
            )
        except FormatError as exc:
            refused = {"filename": exc.filename, "problems": exc.problems}
        except QuestionError as exc:
            refused = {"filename": upload.name, "problems": [str(exc)]}
        else:
            messages.success(request, report.summary())
            return redirect("questions:bank")
    status = 422 if form.errors or refused else 200
    context = {"form": form, "refused": refused}
    return render(request, "questions/setup_questions.html", context, status=status)


@role_required(Role.RESEARCHER)
def topics(request):
    """Every topic, and the form that adds one."""
    form = TopicForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        topic = topic_save(topic=form.save(commit=False))
        messages.success(request, f"Topic “{topic.name}” added.")
        return redirect("questions:setup-topics")
    context = {"form": form, "topics": topics_listed()}
    return render(
        request, "questions/setup_topics.html", context, status=422 if form.errors else 200
    )


@role_required(Role.RESEARCHER)
def topic_edit(request, pk: int):
    topic = get_object_or_404(Topic, pk=pk)
    form = TopicForm(request.POST if request.method == "POST" else None, instance=topic)
    if request.method == "POST" and form.is_valid():
        topic_save(topic=form.save(commit=False))
        messages.success(request, f"Topic “{topic.name}” saved.")
        return redirect("questions:setup-topics")
    context = {"form": form, "topic": topic, "in_use": topic_in_use(topic=topic)}
    return render(
        request, "questions/setup_topic.html", context, status=422 if form.errors else 200
    )
