from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render

from apps.accounts.roles import Role, role_required
from apps.questions.models import Question, Topic
from apps.runs import selectors as run_selectors

from .. import selectors, services
from ..errors import RubricError, RubricForbidden
from ..forms import topic_chosen
from ..models import Rubric, RubricState
from .context import TEMPLATE, rubric_context, samples_context, with_consistency

ANY_ROLE = (Role.EXPERT, Role.REVIEWER, Role.RESEARCHER)


def rubric_for(pk: int) -> Rubric:
    return get_object_or_404(Rubric.objects.select_related("question__topic", "shared_set"), pk=pk)


@role_required(*ANY_ROLE)
def index(request):
    """Every question with its rubric's state, filtered by topic and state."""
    topic = topic_chosen(request.GET)
    state = request.GET.get("state", "")
    questions = selectors.workspace_questions(topic=topic)
    if state == selectors.NOT_STARTED:
        questions = questions.filter(rubric_state=None)
    elif state in RubricState.values:
        questions = questions.filter(rubric_state=state)
    page = Paginator(questions, 50).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "topics": Topic.objects.all(),
        "topic": topic,
        "state": state,
        "state_choices": selectors.STATE_ORDER,
        "progress": selectors.topic_progress(),
    }
    template = "rubrics/index.html#question-table" if request.htmx else "rubrics/index.html"
    return render(request, template, context)


@role_required(*ANY_ROLE)
def question(request, question_id: int):
    """A question's current rubric, or the page that starts one."""
    question = get_object_or_404(Question.objects.select_related("topic"), pk=question_id)
    latest = question.rubrics.order_by("-version").first()
    if latest is not None:
        return redirect("rubrics:rubric", pk=latest.pk)
    return _start_page(request, question)


def _start_page(request, question: Question, *, status: int = 200):
    assignment = selectors.assignment_for(question=question)
    context = {
        "question": question,
        "assignment": assignment,
        "writes": assignment is not None and assignment.author_id == request.user.pk,
    }
    return render(request, "rubrics/start.html", context, status=status)


@role_required(Role.EXPERT)
def start(request, question_id: int):
    """POST: open the question's draft (version 1, or n+1 after an approved version)."""
    question = get_object_or_404(Question, pk=question_id)
    if request.method != "POST":
        return redirect("rubrics:question", question_id=question.pk)
    try:
        rubric = services.rubric_start(question=question, user=request.user)
    except RubricForbidden as exc:
        messages.error(request, str(exc))
        return _start_page(request, question, status=403)
    except RubricError as exc:
        messages.error(request, str(exc))
        return redirect("rubrics:question", question_id=question.pk)
    return redirect("rubrics:rubric", pk=rubric.pk)


@role_required(Role.EXPERT)
def claim(request, question_id: int):
    question = get_object_or_404(Question, pk=question_id)
    if request.method == "POST":
        try:
            services.question_claim(question=question, user=request.user)
            messages.success(request, f"{question} is yours to write.")
        except RubricError as exc:
            messages.error(request, str(exc))
    return redirect("home")


@role_required(*ANY_ROLE)
def rubric(request, pk: int):
    """The rubric page: the editor for a draft, the review for a submitted version, and the
    read-only view of an approved one."""
    rubric = rubric_for(pk)
    answers = run_selectors.answers_ready(question=rubric.question)
    context = with_consistency(rubric_context(request, rubric))
    context.update(samples_context(answers))
    return render(request, TEMPLATE, context)


@role_required(*ANY_ROLE)
def history(request, question_id: int):
    question = get_object_or_404(Question.objects.select_related("topic"), pk=question_id)
    context = {"question": question, "versions": selectors.question_history(question=question)}
    return render(request, "rubrics/history.html", context)
