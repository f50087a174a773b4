"""Participants' pages (public, rate-limited, under /s/<slug>/) and researchers' pages
(role_required(RESEARCHER), under /studies/).

A participant is recognised by the browser binding in binding.py. Any other assignment id
than one's own is a 404.
"""

import contextlib
import hashlib
import logging
import secrets
import time
from urllib.parse import urlencode

from django.contrib import messages
from django.core import signing
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, public, role_required
from apps.console.csv_export import csv_rows
from apps.llm.selectors import run_batches

from . import duration, selectors, services
from .binding import bind, held, participant_required
from .errors import AnswerInvalid, SurveyError
from .forms import (
    DEFAULT_TEXTS,
    DemographicsForm,
    GenerateForm,
    RejectForm,
    ScenarioAnswersForm,
    StudyForm,
)
from .models import (
    ACTIVE_GENERATION,
    Assignment,
    Page,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ReviewStatus,
    Study,
    StudyStatus,
    UnitKind,
)
from .prolific import prolific_client
from .throttle import rate_limited

log = logging.getLogger(__name__)
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"


# --- participants -------------------------------------------------------------------------


def _next_url(participant: Participant) -> str:
    step, assignment = selectors.participant_next(participant=participant)
    slug = participant.study.slug
    if step == "scenario":
        return reverse("surveys:scenario", args=[slug, assignment.pk])
    return reverse(f"surveys:{step}", args=[slug])


def _cannot_start(request, study: Study, problem: str, status: int = 400):
    context = {"study": study, "problem": problem}
    return render(request, "surveys/participant/cannot_start.html", context, status=status)


@public
@rate_limited("survey")
@never_cache
@require_GET
def entry(request, slug):
    study = get_object_or_404(Study, slug=slug)
    try:
        params = services.prolific_params_parse(study=study, query=request.GET)
        participant = services.participant_enter(study=study, params=params)
    except SurveyError as exc:
        return _cannot_start(request, study, str(exc))
    if participant is not None:
        participant.study = study
        return bind(redirect(_next_url(participant)), participant)
    if study.status != StudyStatus.LIVE:
        return _cannot_start(request, study, "This study is not open at the moment.", status=503)
    context = {"study": study, "params": params, "shown": signing.dumps(time.time())}
    context["estimate"] = selectors.study_estimate(study=study)
    return render(request, "surveys/participant/consent.html", context)


def _consent_seconds(token: str) -> float | None:
    try:
        return time.time() - float(signing.loads(token, max_age=86400))
    except (signing.BadSignature, TypeError, ValueError):
        return None


@public
@rate_limited("survey")
@require_POST
def consent(request, slug):
    study = get_object_or_404(Study, slug=slug)
    try:
        params = services.prolific_params_parse(study=study, query=request.POST)
        if request.POST.get("decision") == "decline":
            participant = services.participant_decline(study=study, params=params)
        else:
            seconds = _consent_seconds(request.POST.get("shown", ""))
            participant = services.participant_consent(
                study=study, params=params, consent_seconds=seconds
            )
    except SurveyError as exc:
        return _cannot_start(request, study, str(exc))
    participant.study = study
    if getattr(participant, "arrived", False):  # consented just now: nothing to look up
        return bind(redirect("surveys:instructions", study.slug), participant)
    return bind(redirect(_next_url(participant)), participant)


@public
@rate_limited("survey")
@never_cache
@participant_required
def instructions(request, participant):
    if participant.status != ParticipantStatus.ACTIVE:
        return redirect(_next_url(participant))
    if request.method == "POST":
        services.participant_instructions_read(participant=participant)
        return redirect(_next_url(participant))
    services.page_time_shown(participant=participant, page=Page.INSTRUCTIONS)
    kinds = list(participant.assignments.values_list("study_scenario__kind", flat=True))
    context = {"study": participant.study, "bundle": len(kinds), "pairs": UnitKind.PAIR in kinds}
    return render(request, "surveys/participant/instructions.html", context)


def _rows(form, saved: dict):
    return [
        (item, form[f"value_{item.code}"], form[f"explanation_{item.code}"], saved.get(item.code))
        for item in form.items
    ]


@public
@rate_limited("survey")
@never_cache
@participant_required
def scenario(request, participant, assignment_id):
    if participant.status != ParticipantStatus.ACTIVE:
        return redirect(_next_url(participant))
    # All of the participant's assignments (the page shows where this one sits among them);
    # any other id is someone else's: 404.
    siblings = selectors.participant_assignments(participant=participant)
    assignment = next((a for a in siblings if a.pk == assignment_id), None)
    if assignment is None:
        raise Http404("No such scenario.")
    assignment.participant = participant
    study = participant.study
    items = selectors.items_for_page(
        study=study, position=assignment.position, kinds=selectors.page_kinds(siblings)
    )
    saved = {}
    if request.method == "POST":
        form = ScenarioAnswersForm(request.POST, items=items)
        if form.is_valid():
            # Submitted meanwhile (another tab): the next step says where they are.
            with contextlib.suppress(SurveyError):
                services.assignment_submit(
                    assignment=assignment, answers=form.answers(), items=items
                )
            return redirect(_next_url(participant))
    else:
        saved = selectors.answers_by_code(
            assignment=assignment, items=selectors.study_items(study=study).items
        )
        initial = {f"value_{c}": a.value for c, a in saved.items()} | {
            f"explanation_{c}": a.explanation for c, a in saved.items()
        }
        form = ScenarioAnswersForm(initial=initial, items=items)
        services.page_time_shown(participant=participant, page=Page.SCENARIO, assignment=assignment)
    context = {
        "study": study,
        "assignment": assignment,
        "form": form,
        "bundle": len(siblings),
        "body": selectors.scenario_body_html(study_scenario=assignment.study_scenario),
        "previous": next((a for a in siblings if a.position == assignment.position - 1), None),
        "rows": _rows(form, saved),
    }
    return render(request, "surveys/participant/scenario.html", context)


def _saved(request, slug, assignment_id, item, error="", status=200):
    if not request.htmx and status == 200:
        return redirect("surveys:scenario", slug, assignment_id)
    context = {"item": item, "error": error, "saved_at": timezone.localtime().strftime("%H:%M:%S")}
    return render(request, "surveys/participant/scenario.html#save_state", context, status=status)


@public
@rate_limited("survey")
@require_POST
def answer(request, slug, assignment_id, code):
    """An autosave (htmx) or, without JavaScript, a form post: one answer.

    Two in three requests of a participant are these. When this process knows the study's
    items, one statement checks what participant_required and answer_save would and writes
    (services.answer_save_if_bound); anything it does not write (first request here, items
    changed, survey submitted, someone else's id, a bad value) takes the full path below,
    which decides the answer."""
    value, explanation = request.POST.get(f"value_{code}"), request.POST.get(f"explanation_{code}")
    for participant_id, (study_id, key) in held(request).items():
        known = selectors.cached_study_items(study_id=study_id)
        item = known.by_code.get(code) if known is not None and known.slug == slug else None
        if item is None:
            continue
        with contextlib.suppress(SurveyError):
            if services.answer_save_if_bound(
                participant_id=participant_id,
                browser_key=key,
                study_id=study_id,
                slug=slug,
                items_version=known.version,
                assignment_id=assignment_id,
                item=item,
                value=value,
                explanation=explanation,
            ):
                return _saved(request, slug, assignment_id, item)
    return _answer(request, slug, assignment_id, code, value, explanation)


@participant_required
def _answer(request, participant, assignment_id, code, value, explanation):
    item = selectors.study_items(study=participant.study).by_code.get(code)
    if item is None:
        raise Http404("No such question.")
    error, status = "", 200
    try:
        saved = services.answer_save(
            participant=participant,
            assignment_id=assignment_id,
            item=item,
            value=value,
            explanation=explanation,
        )
    except SurveyError as exc:
        saved, error = True, str(exc)
        status = 400 if isinstance(exc, AnswerInvalid) else 200
        if not participant.assignments.filter(pk=assignment_id).exists():
            saved = False  # someone else's assignment: a 404 whatever else is wrong
    if not saved:
        raise Http404("No such scenario.")
    return _saved(request, participant.study.slug, assignment_id, item, error, status)


@public
@rate_limited("survey")
@never_cache
@participant_required
def demographics(request, participant):
    form = DemographicsForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        # participant_finish checks that every scenario is answered (participant_next's
        # check, and more), so a valid post does not ask where the participant is first.
        try:
            participant = services.participant_finish(
                participant=participant, demographics=form.cleaned_data
            )
        except SurveyError as exc:
            log.warning("participant %s could not finish: %s", participant.pk, exc)
            messages.error(request, str(exc))
        return redirect(_next_url(participant))
    step, _ = selectors.participant_next(participant=participant)
    if step != "demographics":
        return redirect(_next_url(participant))
    if request.method == "GET":
        services.page_time_shown(participant=participant, page=Page.DEMOGRAPHICS)
    fields = [(form[name], DemographicsForm.LEGENDS[name]) for name in DemographicsForm.LEGENDS]
    return render(
        request,
        "surveys/participant/demographics.html",
        {"study": participant.study, "fields": fields},
    )


@public
@rate_limited("survey")
@never_cache
@participant_required
def done(request, participant):
    if participant.status == ParticipantStatus.ACTIVE:
        return redirect(_next_url(participant))
    code = participant.completion_code
    context = {
        "study": participant.study,
        "participant": participant,
        "code": code,
        "prolific_url": f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}" if code else "",
    }
    return render(request, "surveys/participant/done.html", context)


# --- researchers --------------------------------------------------------------------------

researcher = role_required(Role.RESEARCHER)


@researcher
def study_list(request):
    studies = Study.objects.all()
    return render(request, "surveys/studies.html", {"studies": studies})


def _new_code() -> str:
    return "C" + secrets.token_hex(4).upper()


@researcher
def study_create(request):
    initial = DEFAULT_TEXTS | {
        c: _new_code()
        for c in ("code_completed", "code_no_consent", "code_failed_attention", "code_full")
    }
    form = StudyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        fields = {k: v for k, v in form.cleaned_data.items() if k != "scenarios"}
        try:
            study = services.study_create(
                scenarios=form.cleaned_data["scenarios"], user=request.user, **fields
            )
        except SurveyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, "Study created. Generate or import its responses, then go live."
            )
            return redirect("surveys:study_detail", study.pk)
    return render(request, "surveys/study_form.html", _study_form_context(form, None))


@researcher
def study_edit(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    current = [ss.scenario for ss in study.study_scenarios.select_related("scenario")]
    form = StudyForm(request.POST or None, instance=study, initial={"scenarios": current})
    if request.method == "POST" and form.is_valid():
        fields = {k: form.cleaned_data[k] for k in form.Meta.fields}
        scenarios = form.cleaned_data.get("scenarios")  # None: a study of answers
        try:
            services.study_update(study=study, scenarios=scenarios, **fields)
        except SurveyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Study saved.")
            return redirect("surveys:study_detail", study.pk)
    return render(request, "surveys/study_form.html", _study_form_context(form, study))


def _study_form_context(form, study: Study | None) -> dict:
    estimate = selectors.study_estimate(study=study) if study is not None else None
    return {
        "form": form,
        "study": study,
        "estimate": estimate,
        "minutes_per_explanation": duration.MINUTES_PER_EXPLANATION,
    }


POLL_SECONDS = 5


@researcher
@require_GET
def study_detail(request, study_id):
    """The study's page; with HX-Request, only its progress (what the page polls)."""
    study = get_object_or_404(Study, pk=study_id)
    if request.htmx:
        context = _progress_context(request, study)
        return render(request, "surveys/study_detail.html#progress", context)
    return _study_page(request, study, generate_form=GenerateForm())


def _page_number(request) -> int:
    page = request.GET.get("page", "")
    return int(page) if page.isascii() and page.isdigit() and len(page) < 7 else 1


def _progress_context(request, study: Study) -> dict:
    """What the progress partial shows, and how it asks again. `seen` and `responses` come
    back with each poll: the summary (the page's live region) is sent again only when its
    words changed, so a screen reader hears it when something happened, not every poll;
    and the responses' table only once their generation has stopped and some arrived."""
    progress = selectors.study_progress(study=study, page=_page_number(request))
    generation = selectors.study_generation_latest(study=study)
    context = {
        "study": study,
        "progress": progress,
        "generation": generation,
        "generation_batches": run_batches(
            work=services.SCENARIO_RESPONSE_WORK.name, scope=generation.pk
        )
        if generation is not None and generation.batch_mode
        else None,
        "polling": selectors.study_under_way(study=study, progress=progress, generation=generation),
        "poll_seconds": POLL_SECONDS,
    }
    summary = render_to_string("surveys/study_detail.html#summary", context)
    seen = hashlib.blake2s(summary.encode(), digest_size=6).hexdigest()
    responses = progress.scenarios - progress.missing_responses
    here = reverse("surveys:study_detail", args=[study.pk])
    context |= {
        "summary": summary,
        "oob_summary": request.GET.get("seen", seen) != seen,
        "poll_state": urlencode({"seen": seen, "responses": responses}),
        "here_url": f"{here}?page={progress.page}",
        "previous_url": f"{here}?page={progress.page - 1}" if progress.page > 1 else "",
        "next_url": f"{here}?page={progress.page + 1}" if progress.page < progress.pages else "",
    }
    generating = generation is not None and generation.status in ACTIVE_GENERATION
    arrived = request.GET.get("responses", str(responses)) != str(responses)
    if request.htmx and arrived and not generating:
        context |= _responses_context(study, GenerateForm()) | {"oob_responses": True}
    return context


def _responses_context(study: Study, generate_form: GenerateForm) -> dict:
    return {"responses": selectors.study_responses(study=study), "generate_form": generate_form}


def _study_page(request, study: Study, *, generate_form: GenerateForm, status: int = 200):
    context = (
        _progress_context(request, study)
        | _responses_context(study, generate_form)
        | {
            "frozen": selectors.study_items_frozen(study=study),
            "items": study.items.all(),
            "participant_link": _participant_link(request, study),
            "prolific_configured": prolific_client() is not None,
            "estimate": selectors.study_estimate(study=study),
        }
    )
    return render(request, "surveys/study_detail.html", context, status=status)


def _participant_link(request, study: Study) -> str:
    base = request.build_absolute_uri(reverse("surveys:entry", args=[study.slug]))
    return (
        base
        + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


@researcher
@require_POST
def study_status(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    status = request.POST.get("status", "")
    if status == StudyStatus.CLOSED and request.POST.get("confirmed") != "yes":
        return _confirm(
            request,
            title=f"Close “{study.name}”?",
            button="Close the study",
            lines=["Nobody new can start it, and a closed study cannot go live again."],
            action=reverse("surveys:study_status", args=[study.pk]),
            fields=[("status", status)],
            back=reverse("surveys:study_detail", args=[study.pk]),
        )
    try:
        study = services.study_set_status(study=study, status=status)
        messages.success(request, f"The study is now {study.get_status_display().lower()}.")
    except (SurveyError, ValueError) as exc:
        messages.error(request, str(exc) if isinstance(exc, SurveyError) else "Unknown status.")
    return redirect("surveys:study_detail", study.pk)


@researcher
@require_POST
def study_generate(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    form = GenerateForm(request.POST)
    if form.is_valid():
        model = form.cleaned_data["model"]
        try:
            services.scenario_responses_request(
                study=study, model=model, user=request.user, **form.batch_arguments()
            )
        except SurveyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Asked {model} for the missing responses: the page shows them being made.",
            )
            return redirect("surveys:study_detail", study.pk)
    # The study's page again, with the form's errors where it was filled in.
    return _study_page(request, study, generate_form=form, status=400)


@researcher
def study_preview(request, study_id):
    """The study's first unit of each kind (a scenario; or an answer and a pair) as the
    first page of a participant's survey, with the questions asked of it."""
    study = get_object_or_404(Study, pk=study_id)
    firsts = {}
    for unit in study.study_scenarios.order_by("scenario__name", "label", "pk"):
        firsts.setdefault(unit.kind, unit)
    if not firsts:
        raise Http404("This study has no scenarios yet.")
    bundle = study.scenarios_per_participant
    pages = []
    for unit in firsts.values():
        kinds = dict.fromkeys(range(1, bundle + 1), unit.kind)
        items = selectors.items_for_page(study=study, position=1, kinds=kinds)
        form = ScenarioAnswersForm(items=items)
        pages.append(
            {
                "form": form,
                "rows": _rows(form, {}),
                "body": selectors.scenario_body_html(study_scenario=unit),
                "assignment": Assignment(position=1, study_scenario=unit),
            }
        )
    context = {"study": study, "pages": pages, "bundle": bundle, "preview": True}
    return render(request, "surveys/preview.html", context)


def _confirm(request, *, title: str, lines: list[str], action: str, fields, button: str, back):
    """A page asking to confirm a POST: it posts `fields` again with confirmed=yes."""
    context = {
        "title": title,
        "lines": lines,
        "action": action,
        "fields": fields,
        "button": button,
        "back": back,
    }
    return render(request, "surveys/confirm.html", context)


def _review_url(study_id: int, status: str) -> str:
    """The review page showing `status` (empty: every status)."""
    status = status if status in ReviewStatus.values else ""
    return reverse("surveys:study_review", args=[study_id]) + f"?status={status}"


@researcher
def study_review(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    status = request.GET.get("status", ReviewStatus.PENDING)
    status = status if status in ReviewStatus.values else ""
    review = selectors.review(study=study, status=status or None)
    context = {
        "study": study,
        "review": review,
        "rows": review.rows,
        "status": status,
        "statuses": ReviewStatus.choices,
        "reject_form": RejectForm(),
        "active": selectors.people(study).filter(status=ParticipantStatus.ACTIVE),
        "prolific_configured": prolific_client() is not None,
    }
    return render(request, "surveys/review.html", context)


@researcher
@require_POST
def participant_review(request, study_id, participant_id):
    participant = get_object_or_404(
        Participant, pk=participant_id, study_id=study_id, kind=ParticipantKind.HUMAN
    )
    action, client = request.POST.get("action"), prolific_client()
    try:
        if action == "reject":
            form = RejectForm(request.POST)
            if not form.is_valid():
                raise SurveyError(f"not rejected: {form.problems()}")
            services.participant_reject(
                participant=participant,
                user=request.user,
                client=client,
                category=form.cleaned_data["category"],
                message=form.cleaned_data["message"],
            )
        elif action == "returned":
            services.participant_mark_returned(participant=participant)
        else:
            raise SurveyError("Unknown action.")
        messages.success(request, f"{participant.prolific_pid}: done.")
    except SurveyError as exc:
        messages.error(request, f"{participant.prolific_pid}: {exc}")
    return redirect(_review_url(study_id, request.POST.get("back", "")))


@researcher
@require_POST
def study_approve(request, study_id):
    """Approve the chosen submissions, after a page that says who they are and their flags."""
    study = get_object_or_404(Study, pk=study_id)
    # isdigit() alone admits "²", which int() refuses.
    ids = sorted(
        {int(v) for v in request.POST.getlist("participant") if v.isascii() and v.isdigit()}
    )
    back = request.POST.get("back", "")
    if not ids:
        messages.error(request, "Choose the submissions to approve.")
        return redirect(_review_url(study.pk, back))
    if request.POST.get("confirmed") != "yes":
        rows = [r for r in selectors.review(study=study).rows if r.participant.pk in ids]
        lines = [
            f"{r.participant.prolific_pid}: "
            + ("; ".join(f"{f.label}: {f.message}" for f in r.flags) or "no quality flags")
            for r in rows
        ]
        client = prolific_client()
        lines.append(
            "Prolific pays them when it accepts the approval."
            if client is not None
            else "Prolific's API is not configured: approve them on Prolific too (approvals CSV)."
        )
        return _confirm(
            request,
            title=f"Approve {len(rows)} submission{'s' if len(rows) != 1 else ''}?",
            lines=lines,
            button="Approve",
            action=reverse("surveys:study_approve", args=[study.pk]),
            fields=[("participant", i) for i in ids] + [("back", back)],
            back=_review_url(study.pk, back),
        )
    client = prolific_client()
    try:
        approved = services.participants_approve(
            study=study, participant_ids=ids, user=request.user, client=client
        )
        sent = " and on Prolific" if client is not None else ""
        messages.success(request, f"Approved {len(approved)} submission(s) here{sent}.")
    except SurveyError as exc:
        messages.error(request, str(exc))
    return redirect(_review_url(study.pk, back))


@researcher
@require_POST
def study_sync(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    client = prolific_client()
    try:
        if client is None:
            raise SurveyError("Set PROLIFIC_API_TOKEN to read submissions from Prolific.")
        marked = services.study_sync_returned(study=study, client=client)
        messages.success(
            request, f"{marked} returned or timed-out submission(s) marked; their scenarios reopen."
        )
    except SurveyError as exc:
        messages.error(request, str(exc))
    return redirect("surveys:study_review", study.pk)


@researcher
def approvals_csv(request, study_id):
    study = get_object_or_404(Study, pk=study_id)
    header = ["participant_id", "submission_id", "study_id", "completion_code", "finished_at"]
    rows = selectors.approvals(study=study).values_list(
        "prolific_pid", "prolific_session_id", "prolific_study_id", "completion_code", "finished_at"
    )
    response = StreamingHttpResponse(
        csv_rows(header, rows.iterator()), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="approvals-{study.slug}.csv"'
    return response
