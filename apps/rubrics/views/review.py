"""Submitting, commenting, requesting changes, approving, and starting the next version."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect

from apps.accounts.roles import Role, role_required

from .. import services
from ..errors import RubricError, RubricForbidden
from ..forms import CommentForm, RequestChangesForm
from .context import TEMPLATE, rubric_context
from .editing import forbidden, full_page, page_url
from .fragments import fragments
from .pages import rubric_for


def _act(request, pk: int, action, done: str, **kwargs):
    """POST: run `action` on the rubric and go back to its page with what happened."""
    rubric = rubric_for(pk)
    target = page_url(rubric)
    if request.method == "POST":
        try:
            result = action(rubric=rubric, user=request.user, **kwargs)
            messages.success(request, done)
            if getattr(result, "pk", rubric.pk) != rubric.pk:
                target = page_url(result)
        except RubricForbidden as exc:
            return forbidden(request, rubric, exc)
        except RubricError as exc:
            messages.error(request, str(exc))
    if request.htmx:
        # Sent by htmx only so that it waits for the page's pending saves (hx-sync).
        return HttpResponse(headers={"HX-Redirect": target})
    return redirect(target)


@role_required(Role.EXPERT)
def submit(request, pk: int):
    return _act(request, pk, services.rubric_submit_for_review, "Submitted for review.")


@role_required(Role.REVIEWER)
def approve(request, pk: int):
    return _act(request, pk, services.rubric_approve, "Approved. This version is now fixed.")


@role_required(Role.REVIEWER)
def request_changes(request, pk: int):
    form = RequestChangesForm(request.POST)
    if request.method == "POST" and not form.is_valid():
        # Shown on the page with the message as it was written, which is not lost.
        errors = " ".join(form.errors["message"])
        return full_page(
            request,
            rubric_for(pk),
            status=400,
            changes_error=f"Nothing was requested: {errors}",
            changes_message=form.data.get("message", ""),
        )
    message = form.cleaned_data["message"] if form.is_valid() else ""
    done = "Changes requested; the author sees your comments."
    return _act(request, pk, services.rubric_request_changes, done, message=message)


@role_required(Role.REVIEWER)
def claim_review(request, pk: int):
    return _act(request, pk, services.review_claim, "You are the reviewer of this rubric.")


@role_required(Role.EXPERT)
def start_next(request, pk: int):
    """POST on an approved version: open version n+1 as a draft."""
    rubric = rubric_for(pk)

    def start(*, rubric, user):
        return services.rubric_start(question=rubric.question, user=user)

    return _act(request, pk, start, f"Version {rubric.version + 1} is open as a draft.")


@role_required(Role.EXPERT, Role.REVIEWER)
def comment(request, pk: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, "comments"))
    form = CommentForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            services.review_comment_add(
                rubric=rubric,
                user=request.user,
                body=form.cleaned_data["body"],
                criterion_id=form.cleaned_data["criterion"],
            )
        except RubricError as exc:
            error = str(exc)
    else:
        error = "Write a comment first."
    criterion = form.cleaned_data.get("criterion") if form.is_valid() else None
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(page_url(rubric, f"criterion-{criterion}" if criterion else "comments"))
    context = rubric_context(request, rubric, comment_error=error)
    return fragments(
        request, TEMPLATE, context, main="comments", oob=("criteria",), status=422 if error else 200
    )
