"""Screening's pages: a researcher's queue (one post at a time, keyboard first, the next
post arriving as a fragment), a post's own page, and the progress and agreement dashboard.

The queue and a post's page never show another screener's decision: a post is shown with
its text alone until it has both of its decisions."""

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.accounts.roles import Role, role_required

from ..errors import QuestionError
from ..models import LENGTH_LIMIT, SampledPost, ScreeningOutcome, Topic
from ..selectors import screening as selectors
from ..services.screening import screening_decide

TEMPLATE = "questions/screening.html"


def _topic(value: str) -> Topic | None:
    return Topic.objects.filter(slug=value).first() if value else None


def _after(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def _queue_url(topic: Topic | None) -> str:
    query = f"?{urlencode({'topic': topic.slug})}" if topic else ""
    return reverse("questions:screening") + query


def _context(request, *, topic, sampled, state="open", **extra) -> dict:
    queue_url = _queue_url(topic)
    joiner = "&" if "?" in queue_url else "?"
    return {
        "sampled": sampled, "state": state, "topic": topic,
        "topics": Topic.objects.order_by("order", "name"),
        "left": selectors.screening_left(researcher=request.user, topic=topic),
        "reasons": selectors.exclusion_reasons_active(), "length_limit": LENGTH_LIMIT,
        "queue_url": queue_url,
        "skip_url": f"{queue_url}{joiner}after={sampled.pk}" if sampled else "", **extra,
    }  # fmt: skip


def _page(request, context: dict, status: int = 200):
    template = f"{TEMPLATE}#queue" if request.htmx else TEMPLATE
    return render(request, template, context, status=status)


@role_required(Role.RESEARCHER)
def queue(request):
    """The next post to screen (of one topic, if chosen); `after` skips past a post."""
    topic = _topic(request.GET.get("topic", ""))
    after = _after(request.GET.get("after", ""))
    sampled = selectors.screening_next(researcher=request.user, topic=topic, after=after)
    return _page(request, _context(request, topic=topic, sampled=sampled))


def _decision(post) -> dict:
    """The service's arguments from the form: the Include button, or an exclude button
    carrying its reason."""
    if post.get("include") == "1":
        return {"include": True, "reason": None}
    reason_id = post.get("reason", "")
    reason = selectors.exclusion_reasons_active().filter(pk=reason_id).first()
    if reason_id.isdigit() and reason is None:
        raise QuestionError("That exclusion reason is no longer offered: choose another.")
    return {"include": False, "reason": reason}


@role_required(Role.RESEARCHER)
def decide(request, pk: int):
    """GET: this post, if it is still the researcher's to screen. POST: their decision,
    then the next post (a fragment for HTMX, a redirect without JavaScript)."""
    sampled = get_object_or_404(SampledPost.objects.select_related("post", "topic"), pk=pk)
    topic = _topic(request.POST.get("topic", "") or request.GET.get("topic", ""))
    if request.method != "POST":
        state = selectors.screening_state(sampled=sampled, researcher=request.user)
        return _page(request, _context(request, topic=topic, sampled=sampled, state=state))
    error, done = "", ""
    try:
        decision = screening_decide(
            sampled=sampled, researcher=request.user, note=request.POST.get("note", ""),
            **_decision(request.POST),
        )  # fmt: skip
        done = _done_message(decision)
    except QuestionError as exc:
        error = str(exc)
    if not request.htmx:
        messages.add_message(request, messages.ERROR if error else messages.SUCCESS, error or done)
        return redirect(_queue_url(topic))
    following = selectors.screening_next(researcher=request.user, topic=topic, after=pk)
    return _page(request, _context(request, topic=topic, sampled=following, error=error, done=done))


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
