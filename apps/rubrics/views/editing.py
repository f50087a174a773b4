"""The editor's writes. Each answers HTMX with fragments and a plain form post with a
redirect (or the whole page, when there is something to show: an error or a conflict)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role, role_required
from apps.runs import selectors as run_selectors

from .. import services
from ..errors import RubricConflict, RubricError, RubricForbidden
from ..forms import CriterionForm
from ..models import Criterion, Polarity
from .context import TEMPLATE, rubric_context, samples_context, with_consistency
from .fragments import fragments
from .pages import rubric_for

SAVED = ("etag", "totals", "save-status", "conflict")
CRITERION_FIELDS = ("text", "polarity", "kind", "points")


def revision_of(request) -> int | None:
    try:
        return int(request.POST.get("revision", ""))
    except ValueError:
        return None


def page_url(rubric, anchor: str = "") -> str:
    return reverse("rubrics:rubric", args=[rubric.pk]) + (f"#{anchor}" if anchor else "")


def full_page(request, rubric, *, status: int = 200, **extra):
    context = with_consistency(rubric_context(request, rubric, **extra))
    if "samples" not in extra:
        answers = run_selectors.answers_ready(question=rubric.question)
        context.update(samples_context(answers))
    return render(request, TEMPLATE, context, status=status)


def saved(request, rubric, *, main: str | None = None, oob=SAVED, anchor="", **extra):
    if not request.htmx:
        messages.success(request, "Saved.")
        return redirect(page_url(rubric, anchor))
    rubric.refresh_from_db()
    context = rubric_context(request, rubric, saved_at=timezone.now(), **extra)
    if request.POST.get("resolve") == "1":
        # From the conflict panel (which swaps nothing itself): the page's copy of the draft
        # is out of date, so all of it is sent again.
        main, oob = None, (*SAVED, "criteria", "add-form")
    return fragments(request, TEMPLATE, context, main=main, oob=oob)


def invalid(request, rubric, errors: dict, *, criterion_id=None, values=None):
    """A change that was refused for what it says (empty text, points, duplicates...)."""
    edited = {"criterion_id": criterion_id, "values": values or {}, "errors": errors}
    if not request.htmx:
        return full_page(request, rubric, status=422, edited=edited)
    context = rubric_context(request, rubric, edited=edited)
    if criterion_id is None and values is not None:  # the add form shows its own errors
        return fragments(request, TEMPLATE, context, main="add-form", status=422)
    if criterion_id is not None:
        context["c"] = Criterion(pk=criterion_id)
        context["c"].form_errors = errors
        context["status_error"] = " ".join(errors.values())
        return fragments(
            request,
            TEMPLATE,
            context,
            oob=("criterion-errors", "save-status"),
            status=422,
            reswap="none",
        )
    context["status_error"] = " ".join(errors.values())
    return fragments(request, TEMPLATE, context, oob=("save-status",), status=422, reswap="none")


def forbidden(request, rubric, exc: RubricForbidden):
    """Refused for who asked (not the assigned author...): 403, saying who may. HTMX gets the
    reason in the save status and nothing else is swapped."""
    if not request.htmx:
        messages.error(request, str(exc))
        return full_page(request, rubric, status=403)
    context = rubric_context(request, rubric, status_error=str(exc))
    return fragments(request, TEMPLATE, context, oob=("save-status",), status=403, reswap="none")


def conflict(request, rubric, exc: RubricConflict, attempt: dict):
    """Refused because the draft changed: show what changed and keep the user's change."""
    rubric.refresh_from_db()
    extra = {"conflict": exc, "attempt": attempt}
    if not request.htmx:
        return full_page(request, rubric, status=409, **extra)
    context = rubric_context(request, rubric, **extra)
    return fragments(request, TEMPLATE, context, oob=("conflict",), status=409, reswap="none")


def attempt_of(request, label: str, *, url: str | None = None, fields=CRITERION_FIELDS) -> dict:
    values = {name: request.POST.get(name, "") for name in fields}
    polarity = dict(Polarity.choices).get(values.get("polarity"), "")
    return {"label": label, "url": url or request.path, "values": values, "polarity": polarity}


@role_required(Role.EXPERT)
def criterion_add(request, pk: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, "add-criterion"))
    form = CriterionForm(request.POST)
    if not form.is_valid():
        return invalid(request, rubric, form.field_errors(), values=request.POST)
    try:
        criterion = services.criterion_add(
            rubric=rubric, user=request.user, revision=revision_of(request), **form.cleaned_data
        )
    except RubricConflict as exc:
        return conflict(request, rubric, exc, attempt_of(request, "Add a criterion"))
    except RubricForbidden as exc:
        return forbidden(request, rubric, exc)
    except RubricError as exc:
        return invalid(request, rubric, exc.field_errors or {"text": str(exc)}, values=request.POST)
    return saved(
        request,
        rubric,
        main="add-form",
        oob=(*SAVED, "criteria"),
        anchor=f"criterion-{criterion.pk}",
        just_added=criterion.pk,
    )


@role_required(Role.EXPERT)
def criterion_edit(request, pk: int, criterion_id: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, f"criterion-{criterion_id}"))
    form = CriterionForm(request.POST)
    if not form.is_valid():
        return invalid(
            request, rubric, form.field_errors(), criterion_id=criterion_id, values=request.POST
        )
    try:
        _c, _changed = services.criterion_update(
            rubric=rubric,
            criterion_id=criterion_id,
            user=request.user,
            revision=revision_of(request),
            **form.cleaned_data,
        )
    except RubricConflict as exc:
        gone = not rubric.criteria.filter(pk=criterion_id).exists()
        url = reverse("rubrics:criterion_add", args=[rubric.pk]) if gone else None
        return conflict(request, rubric, exc, attempt_of(request, "Edit a criterion", url=url))
    except RubricForbidden as exc:
        return forbidden(request, rubric, exc)
    except RubricError as exc:
        return invalid(
            request,
            rubric,
            exc.field_errors or {"text": str(exc)},
            criterion_id=criterion_id,
            values=request.POST,
        )
    # The row's messages from a refused try go once the change is saved.
    return saved(
        request,
        rubric,
        oob=(*SAVED, "criterion-errors"),
        c=Criterion(pk=criterion_id),
        anchor=f"criterion-{criterion_id}",
    )


@role_required(Role.EXPERT)
def criterion_delete(request, pk: int, criterion_id: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, "criteria-list"))
    try:
        services.criterion_delete(
            rubric=rubric,
            criterion_id=criterion_id,
            user=request.user,
            revision=revision_of(request),
        )
    except RubricConflict as exc:
        return conflict(request, rubric, exc, attempt_of(request, "Delete a criterion", fields=()))
    except RubricForbidden as exc:
        return forbidden(request, rubric, exc)
    except RubricError as exc:
        return invalid(request, rubric, {"text": str(exc)})
    return saved(request, rubric, main="criteria", anchor="criteria-list")


@role_required(Role.EXPERT)
def criterion_move(request, pk: int, criterion_id: int):
    rubric = rubric_for(pk)
    if request.method != "POST":
        return redirect(page_url(rubric, "criteria-list"))
    try:
        services.criterion_move(
            rubric=rubric,
            criterion_id=criterion_id,
            user=request.user,
            revision=revision_of(request),
            direction=request.POST.get("direction", ""),
        )
    except RubricConflict as exc:
        attempt = attempt_of(request, "Move a criterion", fields=("direction",))
        return conflict(request, rubric, exc, attempt)
    except RubricForbidden as exc:
        return forbidden(request, rubric, exc)
    except RubricError as exc:
        return invalid(request, rubric, {"text": str(exc)})
    return saved(request, rubric, main="criteria", anchor=f"criterion-{criterion_id}")
