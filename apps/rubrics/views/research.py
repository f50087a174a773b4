"""The researchers' side: assignments, claiming, shared criteria, freshness, import/export."""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role, role_required
from apps.questions.models import Question, Topic

from .. import selectors, services
from ..errors import ImportRefused, RubricError
from ..forms import (
    AssignmentForm,
    ClaimingForm,
    FreshnessForm,
    RubricImportForm,
    SendBackForm,
    SharedCriteriaForm,
    SharedTextForm,
    topic_chosen,
    whole_number_or_text,
)
from ..interchange import HEALTHBENCH_CONVERSION, export_assay, export_healthbench
from ..models import POINTS, Polarity, RubricImport


@role_required(Role.RESEARCHER)
def workspace(request):
    topic = topic_chosen(request.GET)
    page = Paginator(selectors.workspace_questions(topic=topic), 50).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "topic": topic,
        "topics": Topic.objects.all(),
        "experts": selectors.people_with_role(role=Role.EXPERT),
        "reviewers": selectors.people_with_role(role=Role.REVIEWER),
        "claiming": selectors.claiming_by_topic(),
    }
    return render(request, "rubrics/workspace.html", context)


@role_required(Role.RESEARCHER)
def assign(request, question_id: int):
    question = get_object_or_404(Question.objects.select_related("topic"), pk=question_id)
    form = AssignmentForm(request.POST or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        try:
            services.assignment_set(question=question, user=request.user, **form.cleaned_data)
        except RubricError as exc:
            error = str(exc)
    elif request.method == "POST":
        error = "Choose people from the lists."
    if not request.htmx:
        if error:
            messages.error(request, error)
        else:
            messages.success(request, f"{question} saved.")
        return redirect(reverse("rubrics:workspace") + f"?topic={question.topic.slug}")
    row = selectors.workspace_questions().get(pk=question.pk)
    context = {
        "q": row,
        "experts": selectors.people_with_role(role=Role.EXPERT),
        "reviewers": selectors.people_with_role(role=Role.REVIEWER),
        "row_error": error,
        "row_saved": not error,
    }
    return render(
        request, "rubrics/workspace.html#assignment-row", context, status=422 if error else 200
    )


@role_required(Role.RESEARCHER)
def topic_claiming(request, topic_id: int):
    topic = get_object_or_404(Topic, pk=topic_id)
    form = ClaimingForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.topic_claiming_set(topic=topic, user=request.user, **form.cleaned_data)
            state = "open" if form.cleaned_data["open"] else "closed"
            messages.success(request, f"Claiming in {topic} is {state}.")
        except RubricError as exc:
            messages.error(request, str(exc))
    return redirect(reverse("rubrics:workspace") + "#claiming")


@role_required(Role.RESEARCHER)
def shared_criteria(request):
    """The shared presentation criteria, every version; POST publishes version n+1."""
    form = SharedCriteriaForm(request.POST or None)
    rows, problems = _shared_rows(request.POST) if request.method == "POST" else (None, [])
    for problem in problems:
        messages.error(request, problem)
    if request.method == "POST" and form.is_valid() and not problems:
        try:
            new = services.shared_criteria_publish(
                criteria=rows, notes=form.cleaned_data["notes"], user=request.user
            )
            messages.success(request, f"Version {new.version} published; open drafts carry it now.")
            return redirect("rubrics:shared")
        except RubricError as exc:
            messages.error(request, str(exc))
    current = services.shared_criteria_current()
    context = {
        "form": form,
        "current": current,
        "rows": rows or _rows_of(current),
        "sets": type(current).objects.prefetch_related("criteria"),
        "polarities": Polarity.choices,
        "points_choices": POINTS,
    }
    return render(request, "rubrics/shared.html", context, status=200 if rows is None else 422)


def _rows_of(criterion_set) -> list[dict]:
    rows = [
        {"text": c.text, "polarity": c.polarity, "points": c.points}
        for c in criterion_set.criteria.all()
    ]
    return [*rows, {"text": "", "polarity": Polarity.POSITIVE, "points": 2}]


def _shared_rows(post) -> tuple[list[dict], list[str]]:
    """The rows posted (a blank text removes its row) and what is wrong with their texts
    (the service checks the rest: polarity, points, repeats)."""
    rows, problems = [], []
    for text, polarity, points in zip(
        post.getlist("text"), post.getlist("polarity"), post.getlist("points"), strict=False
    ):
        if text.strip():
            rows.append(
                {"text": text, "polarity": polarity, "points": whole_number_or_text(points)}
            )
            form = SharedTextForm({"text": text})
            if not form.is_valid():
                problems.append(f"Criterion {len(rows)}: {' '.join(form.errors['text'])}")
    return rows, problems


@role_required(Role.RESEARCHER)
def freshness(request):
    """Approved rubrics not verified for a chosen number of days; POST sends some back."""
    days, refused = FreshnessForm(request.GET).days_or_default()
    if refused:
        messages.warning(request, refused)
    status = 200
    if request.method == "POST":
        form = SendBackForm(request.POST)
        if form.is_valid():
            reason = form.cleaned_data["reason"]
            for rubric in form.cleaned_data["rubric"]:
                try:
                    new = services.rubric_send_back(rubric=rubric, user=request.user, reason=reason)
                    messages.success(request, f"{rubric.question}: version {new.version} opened.")
                except RubricError as exc:
                    messages.error(request, str(exc))
            return redirect(reverse("rubrics:freshness") + f"?days={days}")
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        status = 400
    context = {
        "days": days,
        "now": timezone.now(),
        "rubrics": selectors.stale_rubrics(older_than_days=days),
    }
    return render(request, "rubrics/freshness.html", context, status=status)


@role_required(Role.RESEARCHER)
def export(request):
    """Download rubrics (?format=assay|healthbench&scope=approved|latest&topic=slug); without
    a format, the page that explains the choices."""
    fmt = request.GET.get("format")
    topic = topic_chosen(request.GET)
    if fmt not in ("assay", "healthbench"):
        context = {"topics": Topic.objects.all(), "conversion": HEALTHBENCH_CONVERSION}
        return render(request, "rubrics/export.html", context)
    rubrics = selectors.export_rubrics(
        approved_only=request.GET.get("scope") != "latest", topic=topic
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    if fmt == "healthbench":
        body, kind, name = (
            export_healthbench(rubrics),
            "application/jsonl",
            f"rubrics-{stamp}.jsonl",
        )
    else:
        shared = services.shared_criteria_current().criteria.all()
        names = list(Topic.objects.values_list("name", flat=True))
        doc = export_assay(rubrics, shared, names)
        body = json.dumps(doc, indent=1, ensure_ascii=False)
        kind, name = "application/json", f"rubrics-{stamp}.json"
    response = HttpResponse(body, content_type=f"{kind}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@role_required(Role.RESEARCHER)
def import_upload(request):
    form = RubricImportForm(request.POST or None, request.FILES or None)
    refused = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        topic = form.cleaned_data["default_topic"]
        options = {**form.cleaned_data, "default_topic": topic.name if topic else ""}
        try:
            saved = services.rubric_import_upload(
                content=upload.read(),
                filename=upload.name,
                format=form.cleaned_data["format"],
                options=options,
                user=request.user,
            )
            return redirect("rubrics:import_preview", pk=saved.pk)
        except ImportRefused as exc:
            problems = exc.problems[:50]
            if len(exc.problems) > len(problems):
                problems.append(f"and {len(exc.problems) - len(problems)} more problem(s)")
            refused = {"filename": exc.filename, "problems": problems}
        except RubricError as exc:
            form.add_error("file", str(exc))
    recent = RubricImport.objects.select_related("uploaded_by")[:10]
    context = {
        "form": form,
        "refused": refused,
        "recent": recent,
        "conversion": HEALTHBENCH_CONVERSION,
    }
    status = 422 if refused or form.errors else 200
    return render(request, "rubrics/import.html", context, status=status)


@role_required(Role.RESEARCHER)
def import_preview(request, pk: int):
    """GET: the conversion, item by item, before anything is written. POST: commit it."""
    upload = get_object_or_404(RubricImport, pk=pk)
    if request.method == "POST":
        try:
            result = services.rubric_import_commit(
                upload=upload,
                user=request.user,
                rescale_confirmed=request.POST.get("confirm_rescale") == "1",
            )
            messages.success(request, _summary(result))
            return redirect("rubrics:import_preview", pk=upload.pk)
        except RubricError as exc:
            messages.error(request, str(exc))
    plan = services.rubric_import_plan(upload=upload)
    return render(request, "rubrics/import_preview.html", {"upload": upload, "plan": plan})


def _summary(result: dict) -> str:
    return (
        f"Imported {len(result['rubrics_created'])} rubric(s) as drafts "
        f"({len(result['questions_created'])} new question(s)); "
        f"{len(result['unchanged'])} already matched their approved version."
    )
