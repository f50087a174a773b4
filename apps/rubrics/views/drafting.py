"""LLM suggestions and sample answers in the editor."""

from django.contrib import messages
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect

from apps.accounts.roles import Role, role_required
from apps.runs import selectors as run_selectors
from apps.runs.errors import RunError
from apps.runs.services import sample_answers_draw

from .. import services
from ..errors import RubricConflict, RubricError, RubricForbidden
from ..forms import CriterionForm, SampleIdsForm
from .context import TEMPLATE, rubric_context, samples_context
from .editing import SAVED, attempt_of, conflict, forbidden, full_page, page_url, revision_of
from .fragments import fragments
from .pages import rubric_for


@role_required(Role.EXPERT)
def suggest(request, pk: int):
    """POST: ask the drafting model for criteria; a worker answers, the panel polls."""
    rubric = rubric_for(pk)
    if request.method == "POST":
        try:
            services.draft_job_request(rubric=rubric, user=request.user)
        except RubricForbidden as exc:
            return forbidden(request, rubric, exc)
        except RubricError as exc:
            return _suggestions(request, rubric, error=str(exc))
    return _suggestions(request, rubric)


@role_required(Role.EXPERT)
def suggestions(request, pk: int):
    """GET: the suggestions panel (polled while a job runs)."""
    return _suggestions(request, rubric_for(pk))


def _suggestions(request, rubric, error: str = ""):
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(page_url(rubric, "suggestions"))
    context = rubric_context(request, rubric, suggest_error=error)
    return fragments(request, TEMPLATE, context, main="suggestions")


@role_required(Role.EXPERT)
def suggestion_accept(request, pk: int, suggestion_id: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, "suggestions"))
    edited = {}
    if request.POST.get("edited") == "1":
        form = CriterionForm(request.POST)
        if not form.is_valid():
            return _refused(request, rubric, " ".join(form.field_errors().values()))
        edited = form.cleaned_data
    try:
        criterion = services.suggestion_accept(
            rubric=rubric,
            suggestion_id=suggestion_id,
            user=request.user,
            revision=revision_of(request),
            **edited,
        )
    except RubricConflict as exc:
        return conflict(request, rubric, exc, attempt_of(request, "Accept a suggestion"))
    except RubricForbidden as exc:
        return forbidden(request, rubric, exc)
    except RubricError as exc:
        return _refused(request, rubric, str(exc))
    if not request.htmx:
        messages.success(request, "Suggestion accepted: it is now a criterion you can edit.")
        return redirect(page_url(rubric, f"criterion-{criterion.pk}"))
    rubric.refresh_from_db()
    context = rubric_context(request, rubric)
    if request.POST.get("resolve") == "1":  # from the conflict panel, which swaps nothing
        return fragments(request, TEMPLATE, context, oob=(*SAVED, "criteria", "suggestions"))
    return fragments(request, TEMPLATE, context, main="suggestions", oob=(*SAVED, "criteria"))


def _refused(request, rubric, message: str):
    if not request.htmx:
        messages.error(request, message)
        return redirect(page_url(rubric, "suggestions"))
    context = rubric_context(request, rubric, suggest_error=message)
    return fragments(request, TEMPLATE, context, main="suggestions", status=422)


@role_required(Role.EXPERT)
def suggestion_reject(request, pk: int, suggestion_id: int):
    rubric = rubric_for(pk)
    if request.method == "POST":
        try:
            services.suggestion_reject(
                rubric=rubric, suggestion_id=suggestion_id, user=request.user
            )
        except RubricForbidden as exc:
            return forbidden(request, rubric, exc)
        except RubricError as exc:
            return _refused(request, rubric, str(exc))
    return _suggestions(request, rubric)


@role_required(Role.EXPERT, Role.REVIEWER)
def samples(request, pk: int):
    """GET ?show=ids: the shown answers (polled while generating). POST: draw two (others)."""
    rubric = rubric_for(pk)
    question, error = rubric.question, ""
    if request.method == "POST":
        exclude, error = SampleIdsForm(request.POST).ids("exclude")
        if error:  # only a hand-made request sends these
            if request.htmx:
                return HttpResponseBadRequest(error, content_type="text/plain; charset=utf-8")
            return full_page(request, rubric, status=400, **samples_context([], error))
        try:
            answers = sample_answers_draw(question=question, exclude_model_ids=exclude)
        except RunError as exc:
            answers, error = [], str(exc)
    else:  # a filter: an unreadable one shows no answers and says why
        show, error = SampleIdsForm(request.GET).ids("show")
        answers = run_selectors.answers_by_ids(question=question, ids=show)
    if not request.htmx:
        return full_page(request, rubric, **samples_context(answers, error))
    context = {**rubric_context(request, rubric), **samples_context(answers, error)}
    return fragments(request, TEMPLATE, context, main="samples")
