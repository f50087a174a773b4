"""Rewriting (researchers only): start a job, follow it, review a rewrite beside its
original, edit and approve it; and the cosine of embeddings of the approved rewrites, with an
embedding model the researcher picks. Whatever makes a job take calls (start, resume) queues
its work after its transaction commits; the services never queue anything."""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, role_required
from apps.llm.batch_mode import BatchModeForm
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose
from apps.llm.progress import run_urls
from apps.llm.selectors import runs_batches
from apps.llm.views import run_control

from .. import selectors, services
from ..errors import QuestionError
from ..interchange import QUESTION_TEXT_MAX
from ..models import Rewrite, RewriteJob, Topic
from ..services.bank import normalise_newlines
from ..similarity import (
    COSINE_CHOICE,
    COSINE_METHOD,
    EMBEDDING_COSINE_CHOICE,
    EMBEDDING_COSINE_METHOD,
    PUBLISHED_COSINE_MEAN,
    PUBLISHED_TRIGRAM_MEAN,
    TRIGRAM_METHOD,
)

researcher = role_required(Role.RESEARCHER)
METHODS = {
    "cosine_method": COSINE_METHOD,
    "cosine_choice": COSINE_CHOICE,
    "trigram_method": TRIGRAM_METHOD,
    "embedding_method": EMBEDDING_COSINE_METHOD,
    "embedding_choice": EMBEDDING_COSINE_CHOICE,
    "published_cosine": PUBLISHED_COSINE_MEAN,
    "published_trigram": PUBLISHED_TRIGRAM_MEAN,
}


class ModelChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        return str(obj)  # "name (offline demo model)" for the offline provider's models


class StartForm(BatchModeForm):
    batch_models_field = "model"
    batch_models_named = "The model"

    model = ModelChoice(
        ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT).order_by("display_name")
    )
    topic = forms.ModelChoiceField(
        Topic.objects.order_by("order", "name"),
        required=False,
        empty_label="Every topic",
        help_text="Rewrite only this topic's questions.",
    )
    prompt = forms.ModelChoiceField(
        PromptTemplate.objects.filter(purpose=Purpose.REWRITE).order_by("-version"),
        required=False,
        empty_label="The latest version",
        help_text="The rewrite prompt version, pinned for the whole job.",
    )


class EmbeddingForm(forms.Form):
    model = ModelChoice(
        selectors.embedding_models(),
        label="Embedding model",
        help_text="A model config whose kind is embeddings (console: LLM gateway, Model configs).",
    )


TEXT_TOO_LONG = (
    f"A question is at most {QUESTION_TEXT_MAX:,} characters (this text has %(show_value)s)."
)


class ApproveForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12}),
        label="Question text to approve",
        max_length=QUESTION_TEXT_MAX,
        error_messages={"max_length": TEXT_TOO_LONG},
        help_text="Edit the rewrite if it needs it; this becomes the question's text.",
    )


class PreviewForm(forms.Form):
    """An edit sent with GET to see its differences (never stored), within the limit of a
    question, whose differences are computed word by word."""

    text = forms.CharField(
        required=False,
        strip=False,
        max_length=QUESTION_TEXT_MAX,
        error_messages={"max_length": TEXT_TOO_LONG},
    )


@researcher
def rewrites(request):
    """The start form, the jobs (the `jobs` partial alone for the poll), the rewrites
    waiting for review and the approved ones."""
    if request.htmx and request.method == "GET":
        return render(request, "questions/rewrites.html#jobs", _jobs_context())
    form = StartForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and (job := _start(request, form.cleaned_data)):
        messages.success(request, f"Started: {job.rewrites.count()} question(s) to rewrite.")
        return redirect("questions:rewrites")
    approved = selectors.questions_rewritten()
    context = (
        _jobs_context()
        | METHODS
        | {
            "form": form,
            "to_rewrite": selectors.questions_to_rewrite().count(),
            "waiting": selectors.rewrites_waiting(),
            "approved": approved,
            "means": selectors.rewrite_metrics_means(questions=approved),
            "embedding_means": selectors.embedding_cosine_means(questions=approved),
        }
    )
    return render(request, "questions/rewrites.html", context, status=422 if form.errors else 200)


def _start(request, data) -> RewriteJob | None:
    questions = selectors.questions_to_rewrite(topic=data["topic"])
    try:
        return services.rewrite_job_start(
            questions=questions,
            model=data["model"],
            prompt=data["prompt"],
            user=request.user,
            batch_mode=data["batch_mode"],
            batch_retry=data["batch_retry"],
        )
    except QuestionError as exc:
        messages.error(request, str(exc))
        return None


def _jobs_context() -> dict:
    jobs = selectors.rewrite_jobs()
    batched = [job for job in jobs if job.batch_mode]
    batches = runs_batches(work=services.REWRITE_WORK.name, scopes=[job.pk for job in batched])
    return {
        "jobs": [(job, _job_urls(job)) for job in jobs],
        # The jobs in batch mode, each with its provider batches, shown under the table.
        "batched": [(job, batches[job.pk]) for job in batched],
        "polling": any(job.status == "running" for job in jobs),
    }


# What a job's row offers (urls.py routes each to `job_move`).
JOB_MOVES = tuple(services.REWRITE_JOB_CONTROLS)


def _job_urls(job: RewriteJob) -> dict[str, str]:
    return run_urls("questions:rewrite-job-{move}", job.pk, moves=JOB_MOVES)


@researcher
@require_POST
def job_move(request, pk: int, move: str):
    """A move from a job's row: pause, resume, cancel, or its failed rewrites again."""
    job = get_object_or_404(RewriteJob, pk=pk)
    controls = services.REWRITE_JOB_CONTROLS
    back = reverse("questions:rewrites")
    rows = ("rewrite", "rewrites")
    return run_control(
        request, run=job, move=move, controls=controls, error=QuestionError, rows=rows, back=back
    )


def _rewrite(pk: int) -> Rewrite:
    rewrites = Rewrite.objects.select_related(
        "question__topic", "question__rewrite_approved_by", "job__model", "job__prompt"
    )
    return get_object_or_404(rewrites, pk=pk)


@researcher
def review(request, pk: int):
    """The original and the rewrite side by side, differences marked; edit and approve.
    Once approved: the approved text, its provenance and its two measures."""
    rewrite = _rewrite(pk)
    # A text sent with GET is a preview of the differences an edit makes (the textarea's
    # htmx request, or the "Show differences" button without JavaScript).
    preview = PreviewForm(request.GET)
    edited = None
    if "text" in request.GET and preview.is_valid():
        edited = normalise_newlines(preview.cleaned_data["text"])
    form = ApproveForm(request.POST or None, initial={"text": edited or rewrite.text})
    if request.method == "POST" and form.is_valid():
        text = normalise_newlines(form.cleaned_data["text"])
        try:
            services.rewrite_approve(rewrite=rewrite, text=text, user=request.user)
        except QuestionError as exc:
            form.add_error("text", str(exc))
        else:
            messages.success(request, f"Approved: this is now the text of {rewrite.question}.")
            return redirect("questions:rewrite", rewrite.pk)
    question = rewrite.question
    approved = question.rewrite_id == rewrite.pk
    shown = question.text if approved else (edited or rewrite.text)
    posted = form.data.get("text", "") if form.is_bound else ""
    if len(posted) <= QUESTION_TEXT_MAX:  # a longer one is refused, not compared
        shown = normalise_newlines(posted) or shown
    context = METHODS | {
        "rewrite": rewrite,
        "question": question,
        "form": form,
        "shown": shown,
        "preview_errors": preview.errors.get("text", []),
        "approved": approved,
        "edited": edited is not None and edited != rewrite.text,
        "diff": selectors.rewrite_diff(original=question.original_text, rewrite=shown),
        "embedding_cosines": selectors.embedding_cosines_of(question=question) if approved else [],
    }
    template = (
        "questions/rewrite_review.html#diff" if request.htmx else "questions/rewrite_review.html"
    )
    status = 422 if form.errors else 400 if preview.errors and not request.htmx else 200
    return render(request, template, context, status=status)


@researcher
@require_POST
def reject(request, pk: int):
    rewrite = _rewrite(pk)
    try:
        services.rewrite_reject(rewrite=rewrite, user=request.user)
    except QuestionError as exc:
        messages.error(request, str(exc))
        return redirect("questions:rewrite", rewrite.pk)
    messages.success(request, f"Rejected: {rewrite.question} is to rewrite again.")
    return redirect("questions:rewrites")


@researcher
def embedding_cosines(request):
    """The cosine of embeddings of every approved rewrite and its original, with a chosen
    embedding model: start a job (POST), follow it and its results as they come (the
    `results` partial alone for the poll: the jobs, the means by method and model beside
    the TF-IDF cosine, and the failures with their reasons)."""
    if request.htmx and request.method == "GET":
        return render(request, "questions/embedding_cosines.html#results", _embedding_results())
    form = EmbeddingForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.embedding_cosine_job_start(
                model=form.cleaned_data["model"], user=request.user
            )
        except QuestionError as exc:
            messages.error(request, str(exc))
        else:
            count = job.cosines.count()
            messages.success(request, f"Started: the cosine of {count} approved rewrite(s).")
            return redirect("questions:embedding-cosines")
    context = _embedding_results() | {
        "form": form,
        "approved_count": selectors.questions_rewritten().count(),
    }
    status = 422 if form.errors else 200
    return render(request, "questions/embedding_cosines.html", context, status=status)


def _embedding_results() -> dict:
    jobs = selectors.embedding_cosine_jobs()
    approved = selectors.questions_rewritten()
    return METHODS | {
        "jobs": jobs,
        "polling": any(job.under_way for job in jobs),
        "means": selectors.rewrite_metrics_means(questions=approved),
        "embedding_means": selectors.embedding_cosine_means(questions=approved),
        "failures": selectors.embedding_cosine_failures(),
    }
