"""Strata labels (label, verify blind, resolve) and the quota dashboard, for researchers.

The verification form is the labelling form: it never carries the first labels, neither as
initial values nor in the page, so that the second researcher's labels are their own.
"""

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, role_required
from apps.console.form_fields import IdField

from ..errors import QuestionError
from ..models import GUIDANCE_HELP, SENSEMAKING_HELP, Question, Topic
from ..selectors import strata as selectors
from ..services import strata as services

researcher = role_required(Role.RESEARCHER)
YES_NO = [("yes", "Yes: says what they already tried"), ("no", "No")]
NEED_YES_NO = [("yes", "Yes"), ("no", "No")]
STEPS = {"label": services.question_label, "verify": services.question_label_verify}


class LabelForm(forms.Form):
    prior_attempt = forms.ChoiceField(
        choices=YES_NO,
        widget=forms.RadioSelect,
        label="Does the writer mention what they already tried?",
        error_messages={"required": "Say whether the writer mentions what they already tried."},
    )
    # The two needs are labelled one by one: a question may ask for both, one or neither.
    sensemaking = forms.ChoiceField(
        choices=NEED_YES_NO,
        widget=forms.RadioSelect,
        label="Does the question ask for sensemaking?",
        help_text=SENSEMAKING_HELP,
        error_messages={"required": "Say whether the question asks for sensemaking."},
    )
    guidance = forms.ChoiceField(
        choices=NEED_YES_NO,
        widget=forms.RadioSelect,
        label="Does the question ask for guidance?",
        help_text=GUIDANCE_HELP,
        error_messages={"required": "Say whether the question asks for guidance."},
    )
    # Which step the form was shown for: a stale form (someone labelled the question since)
    # is refused by that step's service rather than taken for the next step.
    step = forms.ChoiceField(
        choices=[(s, s) for s in ("label", "verify", "resolve")], widget=forms.HiddenInput
    )

    def labels(self) -> dict:
        data = self.cleaned_data
        return {
            "mentions_prior_attempt": data["prior_attempt"] == "yes",
            "needs_sensemaking": data["sensemaking"] == "yes",
            "needs_guidance": data["guidance"] == "yes",
        }


# More questions than any bank holds, and well inside the columns' integers.
QUOTA_MAX = 1_000_000


class QuotaSettingsForm(forms.Form):
    target_per_topic = forms.IntegerField(
        min_value=1, max_value=QUOTA_MAX, label="Target questions per topic"
    )
    minimum_per_stratum = forms.IntegerField(
        min_value=0, max_value=QUOTA_MAX, label="Minimum per stratum, in every topic"
    )


class PickForm(forms.Form):
    """The topic a queue is narrowed to and the question chosen from it, by id. A value that
    names neither is taken as not given."""

    topic = IdField(required=False)
    question = IdField(required=False)

    def chosen(self, name: str, model):
        self.is_valid()  # a value that does not parse is left out; the other applies
        pk = self.cleaned_data.get(name)
        return model.objects.filter(pk=pk).first() if pk else None


def _topic(params) -> Topic | None:
    return PickForm(params).chosen("topic", Topic)


def _work(request, topic, current=None, form=None, done=None) -> dict:
    """The queue and the question being worked on (the `work` partial's context)."""
    queue = selectors.label_queue(researcher=request.user, topic=topic)
    current = current or queue.next
    step = selectors.label_step_for(question=current, researcher=request.user) if current else ""
    form = form or LabelForm(initial={"step": step})
    return {
        "queue": queue,
        "current": current,
        "step": step,
        "form": form,
        "done": done,
        "topic": topic,
        "topics": Topic.objects.all(),
    }


@researcher
@require_GET
def labels(request):
    topic = _topic(request.GET)
    current = PickForm(request.GET).chosen("question", Question)
    context = _work(request, topic, current=current)
    template = "questions/labels.html#work" if request.htmx else "questions/labels.html"
    return render(request, template, context)


@researcher
@require_POST
def label(request, pk: int):
    question = get_object_or_404(Question, pk=pk)
    topic, form = _topic(request.POST), LabelForm(request.POST)
    if form.is_valid():
        step = STEPS.get(form.cleaned_data["step"], services.question_label)
        try:
            step(question=question, researcher=request.user, **form.labels())
        except QuestionError as exc:
            form.add_error(None, str(exc))
    if form.errors:
        context = _work(request, topic, current=question, form=form)
        template = "questions/labels.html#work" if request.htmx else "questions/labels.html"
        return render(request, template, context, status=200 if request.htmx else 422)
    done = f"Labels of {question} saved."
    if request.htmx:
        return render(request, "questions/labels.html#work", _work(request, topic, done=done))
    messages.success(request, done)
    query = f"?{urlencode({'topic': topic.pk})}" if topic else ""
    return redirect(reverse("questions:labels") + query)


@researcher
def disputes(request):
    """The disputed questions with both labels side by side; a POST resolves one."""
    topic = _topic(request.GET)
    if request.method == "POST":
        return _resolve(request)
    context = {
        "questions": selectors.disputed_questions(topic=topic),
        "topic": topic,
        "topics": Topic.objects.all(),
        "form": LabelForm(initial={"step": "resolve"}),
    }
    template = "questions/disputes.html#list" if request.htmx else "questions/disputes.html"
    return render(request, template, context)


def _resolve(request):
    question = PickForm(request.POST).chosen("question", Question)
    if question is None:
        raise Http404("No such question.")
    form = LabelForm(request.POST)
    if form.is_valid():
        try:
            services.question_label_resolve(
                question=question, researcher=request.user, **form.labels()
            )
        except QuestionError as exc:
            form.add_error(None, str(exc))
    if request.htmx and form.errors:
        shown = selectors.disputed_questions().filter(pk=question.pk).first() or question
        return render(request, "questions/disputes.html#dispute", {"q": shown, "form": form})
    if request.htmx:
        return render(request, "questions/disputes.html#resolved", {"q": question})
    if form.errors:  # without JavaScript: said on the page it returns to
        problems = [e for errors in form.errors.values() for e in errors]
        messages.error(request, f"{question} was not resolved: {' '.join(problems)}")
    else:
        messages.success(request, f"The labels of {question} are resolved.")
    return redirect("questions:disputes")


@researcher
def quotas(request):
    current = selectors.quota_settings()
    initial = {
        "target_per_topic": current.target_per_topic,
        "minimum_per_stratum": current.minimum_per_stratum,
    }
    form = QuotaSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.quota_settings_update(**form.cleaned_data)
        except QuestionError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Quota settings saved.")
            return redirect("questions:quotas")
    context = {"table": selectors.quota_table(settings=current), "settings": current, "form": form}
    return render(request, "questions/quotas.html", context, status=422 if form.errors else 200)
