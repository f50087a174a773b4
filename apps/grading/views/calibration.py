"""Calibration's pages: sets (list, form, progress), an expert's queue, the blind grading
page, the adjudication page and the report of a grading run against the final labels.

Who may see what follows the protocol: researchers make sets and read reports; an answer
is graded only by its rubric's author (first) and its set's second grader; its
disagreements are settled by those two. The grading and adjudication pages never show an
auto-rater's judgment, and the grading page never shows the other grader's labels.
"""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.models import User
from apps.accounts.roles import Role, role_required
from apps.llm.models import ModelConfig
from apps.rubrics.models import Kind, Polarity
from apps.runs.models import RunKind, SamplingRun

from ..errors import GradingError
from ..forms import GradeForm, ReportFilterForm, SettleForm, UndoForm
from ..models import NOTE_MAX_CHARS, CalibrationSample
from ..selectors import calibration as selectors
from ..services import calibration as services

ANY_ROLE = (Role.EXPERT, Role.REVIEWER, Role.RESEARCHER)
PAGE_SIZE = 25


class CalibrationSetForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    sampling_run = forms.ModelChoiceField(
        SamplingRun.objects.filter(kind=RunKind.BENCHMARK), empty_label=None
    )
    models = forms.ModelMultipleChoiceField(
        ModelConfig.objects.order_by("display_name"),
        help_text="One answer per question is drawn from these models' answers.",
    )
    seed = forms.IntegerField(
        required=False, help_text="Leave blank for a random seed; the same seed redraws the same."
    )
    second_grader = forms.ModelChoiceField(
        User.objects.filter(groups__name=Role.RESEARCHER, is_active=True).order_by("username"),
        help_text="The researcher who grades every answer after its author, and adjudicates.",
    )


@role_required(Role.RESEARCHER)
def calibration_sets(request):
    form = CalibrationSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            made = services.calibration_set_create(**form.cleaned_data, user=request.user)
        except GradingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{made.samples.count()} answers drawn for {made}.")
            return redirect("grading:calibration_set", pk=made.pk)
    page = Paginator(selectors.calibration_sets_list(), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "grading/calibration_sets.html",
        {"form": form, "page": page},
        status=422 if form.errors else 200,
    )


def _set(pk: int):
    found = selectors.calibration_set_get(pk=pk)
    if found is None:
        raise Http404("No such calibration set.")
    return found


@role_required(Role.RESEARCHER)
def calibration_set(request, pk: int):
    calibration_set = _set(pk)
    page = Paginator(selectors.set_samples(calibration_set=calibration_set), 50).get_page(
        request.GET.get("page")
    )
    context = {
        "set": calibration_set,
        "page": page,
        "runs": selectors.gradable_runs(calibration_set=calibration_set),
        "calibrations": calibration_set.calibrations.select_related("grading_run"),
    }
    return render(request, "grading/calibration_set.html", context)


@role_required(Role.RESEARCHER)
@require_POST
def calibration_open(request, pk: int):
    """ "Calibrate this grading run against this set": make (or find) the calibration."""
    calibration_set = _set(pk)
    form = forms.Form(request.POST)
    form.fields["grading_run"] = forms.ModelChoiceField(
        selectors.gradable_runs(calibration_set=calibration_set)
    )
    if not form.is_valid():
        messages.error(request, "Choose one of this sampling run's grading runs.")
        return redirect("grading:calibration_set", pk=pk)
    try:
        made = services.calibration_create(
            calibration_set=calibration_set,
            grading_run=form.cleaned_data["grading_run"],
            user=request.user,
        )
    except GradingError as exc:
        messages.error(request, str(exc))
        return redirect("grading:calibration_set", pk=pk)
    return redirect("grading:calibration_report", pk=made.pk)


@role_required(*ANY_ROLE)
def calibration_queue(request):
    context = selectors.expert_queue(user=request.user)
    context["last"] = selectors.grade_last(user=request.user)
    return render(request, "grading/calibration_queue.html", context)


def _sample(request, pk: int) -> tuple[CalibrationSample, str]:
    sample = selectors.sample_get(pk=pk)
    if sample is None:
        raise Http404("No such calibration answer.")
    turn = services.grader_turn(sample=sample, user=request.user)
    if turn is None:
        raise PermissionDenied("Only the answer's rubric author and second grader open it.")
    return sample, turn


@role_required(*ANY_ROLE)
def calibration_grade(request, pk: int):
    """The blind grading page: the question, the answer and the criteria, nothing else. A
    grade the form refuses (a note past its limit, a NUL) is shown again as it was sent,
    with the reason beside its criterion, and nothing of it is saved."""
    sample, turn = _sample(request, pk)
    status, form = 200, None
    if request.method == "POST":
        ids = sample.judgments.values_list("criterion_id", flat=True)
        form = GradeForm(request.POST, criterion_ids=ids)
        if not form.is_valid():
            messages.error(request, "Nothing was saved: see the criteria marked below.")
            status = 400
        else:
            try:
                sample = services.expert_grade_save(
                    sample=sample, user=request.user, labels=form.labels(), notes=form.notes()
                )
            except GradingError as exc:
                messages.error(request, str(exc))
                status = 422
            else:
                return _after_grading(request, sample, turn)
    rows = selectors.grading_rows(sample=sample, turn=turn)
    if form is not None and status == 400:
        _as_sent(rows, form)
    context = {
        "sample": sample,
        "turn": turn,
        "rows": rows,
        "marked": sum(r["met"] is not None for r in rows),
        "closed": bool(sample.first_done_at and sample.second_done_at),
        "note_max": NOTE_MAX_CHARS,
        "last": selectors.grade_last(user=request.user),
    }
    return render(request, "grading/calibration_grade.html", context, status=status)


def _as_sent(rows: list[dict], form: GradeForm) -> None:
    """Show each row as the refused form sent it, with its reasons, so nothing typed is lost."""
    for row in rows:
        pk = row["criterion"].pk
        met = form.data.get(f"met-{pk}")
        if met in ("1", "0"):
            row["met"] = met == "1"
        if f"note-{pk}" in form.data:
            row["note"] = form.data[f"note-{pk}"]
        row["error"] = form.row_error(pk)


def _after_grading(request, sample: CalibrationSample, turn: str):
    if getattr(sample, f"{turn}_done_at") is None:
        left = sample.judgments.filter(**{f"{turn}_met__isnull": True}).count()
        messages.warning(request, f"Saved. {left} criteria are still to mark.")
        return redirect("grading:calibration_grade", pk=sample.pk)
    messages.success(request, f"Your grade of {sample.question.external_id} is saved.")
    following = selectors.queue_next(user=request.user, after=sample)
    if following is not None:
        return redirect("grading:calibration_grade", pk=following.pk)
    return redirect("grading:calibration_queue")


@role_required(*ANY_ROLE)
@require_POST
def calibration_undo(request):
    """Reopen the grader's last completed grade while the other grade of its answer is
    still to come, and take them back to it; a refusal says why, on their queue."""
    form = UndoForm(request.POST)
    try:
        if not form.is_valid():
            raise GradingError("That is not an answer of yours: nothing was undone.")
        sample = services.expert_grade_undo(
            user=request.user, sample_id=form.cleaned_data.get("sample")
        )
    except GradingError as exc:
        messages.error(request, str(exc))
        return redirect("grading:calibration_queue")
    messages.success(
        request,
        f"Your grade of {sample.question.external_id} is open again: change what you need "
        "and save it.",
    )
    return redirect("grading:calibration_grade", pk=sample.pk)


SETTLE = "grading/calibration_adjudicate.html"


@role_required(*ANY_ROLE)
def calibration_adjudicate(request, pk: int):
    """One answer's disagreements on one screen: both graders' labels and notes beside each
    criterion they labelled differently, every final label sent in one request, and the
    walk to the answer before and after (HTMX swaps the answer in and the address follows
    it, so a reload or a bookmark lands on the answer shown)."""
    sample, turn = _sample(request, pk)
    status, error, done, form = 200, "", "", None
    if request.method == "POST":
        ids = selectors.adjudication_rows(sample=sample)["disagreements"]
        form = SettleForm(request.POST, criterion_ids=[r.criterion_id for r in ids])
        if not form.is_valid():
            error, status = "Nothing was saved: see the criteria marked below.", 400
        else:
            try:
                services.disagreements_settle(
                    sample=sample,
                    user=request.user,
                    finals=form.finals(),
                    notes=form.notes(),
                    from_author=form.from_author(),
                )
            except GradingError as exc:
                error, status = str(exc), 422
            else:
                done = _settled_message(form)
                if not request.htmx:
                    messages.success(request, done)
                    return redirect("grading:calibration_adjudicate", pk=sample.pk)
    sample = selectors.sample_get(pk=sample.pk)
    rows = selectors.adjudication_rows(sample=sample)
    if error and form is not None:
        _settle_as_sent(rows["disagreements"], form)
    context = {
        "sample": sample,
        "turn": turn,
        "error": error,
        "done": done,
        "note_max": NOTE_MAX_CHARS,
        "walk": selectors.settle_walk(user=request.user, sample=sample),
        **rows,
    }
    # The back button asks for the whole page (no snapshot is kept: the labels saved since
    # would be shown stale), as does a reload.
    if request.htmx and not request.htmx.history_restore_request:
        return render(request, f"{SETTLE}#fragment", context)
    return render(request, SETTLE, context, status=status)


def _settled_message(form: SettleForm) -> str:
    count = len(set(form.finals()) | set(form.from_author()))
    taken = len(form.from_author())
    text = f"Saved {count} final label{'s' if count != 1 else ''}"
    return text + (f", {taken} of them the rubric author's." if taken else ".")


def _settle_as_sent(rows, form: SettleForm) -> None:
    """Show each criterion as the refused form sent it, so that nothing chosen is lost."""
    for row in rows:
        pk = row.criterion_id
        final = form.data.get(f"final-{pk}")
        if final in ("1", "0"):
            row.final_met = final == "1"
        if f"note-{pk}" in form.data:
            row.resolution_note = form.data[f"note-{pk}"]
        row.picked = bool(form.data.get(f"pick-{pk}"))
        row.error = form.row_error(pk)


def _calibration(request, pk: int):
    calibration = selectors.calibration_get(pk=pk)
    if calibration is None:
        raise Http404("No such calibration.")
    if selectors.set_blind_for(calibration_set=calibration.calibration_set, viewer=request.user):
        raise PermissionDenied(
            "You are still grading answers of this set: its reports open once your grades "
            "are in, so that they stay blind to the auto-rater."
        )
    return calibration


def _filters(values: dict, calibration_set) -> dict:
    model_ids = {m.pk for m in calibration_set.model_configs.all()}
    return {
        "kind": values["kind"] or "",
        "polarity": values["polarity"] or "",
        "model_id": values["model"] if values["model"] in model_ids else None,
        "direction": values["direction"] or "",
    }


@role_required(Role.RESEARCHER)
def calibration_report(request, pk: int):
    calibration = _calibration(request, pk)
    cset, run = calibration.calibration_set, calibration.grading_run
    others = selectors.gradable_runs(calibration_set=cset).exclude(pk=run.pk)
    values = ReportFilterForm(request.GET).values()
    compare = others.filter(pk=values["compare"]).first() if values["compare"] else None
    columns = [
        selectors.run_statistics(calibration_set=cset, grading_run=r)
        for r in (run, compare)
        if r is not None
    ]
    filters = _filters(values, cset)
    found = selectors.disagreements(columns[0].pairs, **filters)
    page = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "calibration": calibration,
        "set": cset,
        "run": run,
        "columns": columns,
        "others": others,
        "compare": compare,
        "filters": filters,
        "page": page,
        "changes": selectors.calibration_changes(calibration=calibration),
        "query": _query(request),
        "directions": selectors.DIRECTIONS,
        "kinds": Kind.choices,
        "polarities": Polarity.choices,
        "models": cset.model_configs.all(),
        **selectors.side_by_side(columns),
    }
    template = "grading/calibration_report.html"
    return render(request, f"{template}#disagreements" if request.htmx else template, context)


def _query(request) -> str:
    """The report's query string without its page, for the pager's links."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()
