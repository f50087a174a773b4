"""Screening's pages: a researcher's queue (one post at a time, keyboard first, the next
post arriving as a fragment), a post's own page, and the progress and agreement dashboard.

The queue and a post's page never show another screener's decision: a post is shown with
its text alone until it has both of its decisions."""

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, role_required
from apps.console.form_fields import IdField

from ..errors import QuestionError
from ..models import (
    LENGTH_LIMIT,
    NOTE_MAX_CHARS,
    ExclusionReason,
    SampledPost,
    ScreeningOutcome,
    Topic,
)
from ..selectors import screening as selectors
from ..services.screening import screening_decide, screening_undo

TEMPLATE = "questions/screening.html"
REASON_OFFERED = "Choose one of the exclusion reasons offered."


class QueueForm(forms.Form):
    """Which queue: a topic (`?topic=slug`) and the post to skip past (`after`). A value that
    names neither is taken as not given."""

    topic = forms.SlugField(required=False, max_length=Topic._meta.get_field("slug").max_length)
    after = IdField(required=False)


class UndoForm(forms.Form):
    """Undo: the decision the page offered to undo (`decision`), so that a second press of
    the key, or a second tab, never withdraws the decision before it unseen."""

    decision = IdField(required=False)


class DecisionForm(forms.Form):
    """A decision: the Include button, or an exclude button carrying its reason (an inactive
    one is refused by the service, with its name)."""

    include = forms.BooleanField(required=False)
    reason = forms.ModelChoiceField(
        ExclusionReason.objects.all(),
        required=False,
        error_messages={"invalid_choice": REASON_OFFERED},
    )
    note = forms.CharField(
        required=False,
        max_length=NOTE_MAX_CHARS,
        error_messages={
            "max_length": f"A note is at most {NOTE_MAX_CHARS:,} characters (this "
            "one has %(show_value)s)."
        },
    )

    def decision(self) -> dict:
        """The service's arguments."""
        data = self.cleaned_data
        if data["include"]:
            return {"include": True, "reason": None, "note": data["note"]}
        return {"include": False, "reason": data["reason"], "note": data["note"]}

    def problems(self) -> str:
        return " ".join(
            f"{self.fields[name].label or name.capitalize()}: {' '.join(errors)}"
            for name, errors in self.errors.items()
        )


def _queue(data) -> tuple[Topic | None, int | None]:
    form = QueueForm(data)
    form.is_valid()  # a value that does not parse is left out; the other applies
    slug, after = form.cleaned_data.get("topic"), form.cleaned_data.get("after")
    return (Topic.objects.filter(slug=slug).first() if slug else None), after


def _queue_url(topic: Topic | None) -> str:
    query = f"?{urlencode({'topic': topic.slug})}" if topic else ""
    return reverse("questions:screening") + query


def _context(request, *, topic, sampled, state="open", **extra) -> dict:
    queue_url = _queue_url(topic)
    joiner = "&" if "?" in queue_url else "?"
    return {
        "sampled": sampled,
        "state": state,
        "topic": topic,
        "topics": Topic.objects.order_by("order", "name"),
        "left": selectors.screening_left(researcher=request.user, topic=topic),
        "reasons": selectors.exclusion_reasons_active(),
        "length_limit": LENGTH_LIMIT,
        "note_max": NOTE_MAX_CHARS,
        "queue_url": queue_url,
        "skip_url": f"{queue_url}{joiner}after={sampled.pk}" if sampled else "",
        "last": selectors.screening_last_decision(researcher=request.user),
        **extra,
    }


def _page(request, context: dict, status: int = 200):
    template = f"{TEMPLATE}#queue" if request.htmx else TEMPLATE
    return render(request, template, context, status=status)


@role_required(Role.RESEARCHER)
def queue(request):
    """The next post to screen (of one topic, if chosen); `after` skips past a post."""
    topic, after = _queue(request.GET)
    sampled = selectors.screening_next(researcher=request.user, topic=topic, after=after)
    return _page(request, _context(request, topic=topic, sampled=sampled))


@role_required(Role.RESEARCHER)
def decide(request, pk: int):
    """GET: this post, if it is still the researcher's to screen. POST: their decision,
    then the next post (a fragment for HTMX, a redirect without JavaScript); a decision the
    form refuses shows this post again, with the reason and the note as it was written."""
    sampled = get_object_or_404(SampledPost.objects.select_related("post", "topic"), pk=pk)
    topic, _after = _queue(request.POST if "topic" in request.POST else request.GET)
    form = DecisionForm(request.POST) if request.method == "POST" else None
    if form is None or not form.is_valid():
        state = selectors.screening_state(sampled=sampled, researcher=request.user)
        context = _context(request, topic=topic, sampled=sampled, state=state)
        if form is None:
            return _page(request, context)
        context |= {"error": form.problems(), "note": form.data.get("note", "")}
        return _page(request, context, status=200 if request.htmx else 400)
    error, done = "", ""
    try:
        decision = screening_decide(sampled=sampled, researcher=request.user, **form.decision())
        done = _done_message(decision)
    except QuestionError as exc:
        error = str(exc)
    if not request.htmx:
        messages.add_message(request, messages.ERROR if error else messages.SUCCESS, error or done)
        return redirect(_queue_url(topic))
    following = selectors.screening_next(researcher=request.user, topic=topic, after=pk)
    return _page(request, _context(request, topic=topic, sampled=following, error=error, done=done))


@role_required(Role.RESEARCHER)
@require_POST
def undo(request):
    """Withdraw the researcher's last decision while its pair is not complete, and show
    them that post again to decide anew (a fragment for HTMX, its page without JavaScript);
    a refusal says why, over the queue."""
    topic, _after = _queue(request.POST)
    form = UndoForm(request.POST)
    try:
        if not form.is_valid():
            raise QuestionError("That is not a decision of yours: nothing was undone.")
        sampled = screening_undo(
            researcher=request.user, decision_id=form.cleaned_data.get("decision")
        )
    except QuestionError as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect(_queue_url(topic))
        following = selectors.screening_next(researcher=request.user, topic=topic)
        return _page(request, _context(request, topic=topic, sampled=following, error=str(exc)))
    done = f"Undone: your decision on {sampled.post.external_id} is withdrawn. Decide it again."
    if not request.htmx:
        messages.success(request, done)
        query = f"?{urlencode({'topic': topic.slug})}" if topic else ""
        return redirect(reverse("questions:screening-decide", args=[sampled.pk]) + query)
    sampled = SampledPost.objects.select_related("post", "topic").get(pk=sampled.pk)
    return _page(request, _context(request, topic=topic, sampled=sampled, done=done))


def _done_message(decision) -> str:
    sampled = decision.sampled
    said = "included" if decision.include else f"excluded ({decision.reason})"
    text = f"Saved: you {said} {sampled.post.external_id}."
    if sampled.outcome == ScreeningOutcome.INCLUDED:
        text += " Both screeners included it: it is now a question in the bank."
    elif sampled.outcome == ScreeningOutcome.EXCLUDED:
        text += " Its pair of decisions is complete: it is excluded."
    return text


@role_required(Role.RESEARCHER)
def dashboard(request):
    return render(request, "questions/screening_dashboard.html", selectors.screening_dashboard())
