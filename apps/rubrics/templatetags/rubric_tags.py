from django import template
from django.utils.html import format_html, format_html_join

from apps.accounts.roles import Role, user_has_role

from .. import selectors
from ..models import EventAction, Kind, Origin, Polarity, RubricState

register = template.Library()

POLARITY_LABELS = dict(Polarity.choices)
KIND_LABELS = dict(Kind.choices)
STATE_LABELS = {**dict(RubricState.choices), selectors.NOT_STARTED: "Not started"}


@register.filter
def state_label(state: str) -> str:
    return STATE_LABELS.get(state or selectors.NOT_STARTED, state)


@register.simple_tag
def criterion_badges(criterion):
    """Polarity, kind, points and origin of a criterion (or a suggestion) as badges."""
    badges = [
        (f"polarity {criterion.polarity}", POLARITY_LABELS.get(criterion.polarity, "")),
        ("kind", KIND_LABELS.get(criterion.kind, "")),
        ("points", f"{criterion.points} pt{'s' if str(criterion.points) != '1' else ''}"),
    ]
    origin = getattr(criterion, "origin", None)
    if origin == Origin.LLM_SUGGESTED:
        badges.append(("llm", "LLM-suggested"))
    return format_html_join(" ", '<span class="badge {}">{}</span>', badges)


def _name(user) -> str:
    if user is None:
        return "someone"
    return user.get_full_name() or user.get_username()


@register.simple_tag
def event_line(event):
    """“Erin Expert edited a criterion at 10:02:13: “…” (was “…”)”, escaped."""
    line = format_html(
        "<strong>{}</strong> {} at {}",
        _name(event.actor),
        event.get_action_display(),
        event.created_at.strftime("%H:%M:%S"),
    )
    detail = event.detail or {}
    before, after = detail.get("before"), detail.get("after")
    if event.action == EventAction.CRITERION_EDITED and before and after:
        return line + format_html(
            ": “{}”, {}, {} points (was “{}”, {}, {} points)",
            after.get("text", ""),
            POLARITY_LABELS.get(after.get("polarity"), "").lower(),
            after.get("points"),
            before.get("text", ""),
            POLARITY_LABELS.get(before.get("polarity"), "").lower(),
            before.get("points"),
        )
    if event.summary:
        line += format_html(": “{}”", event.summary)
    return line


@register.inclusion_tag("rubrics/_home_expert.html", takes_context=True)
def expert_rubrics_panel(context):
    user = context["request"].user
    return {
        "dashboard": selectors.expert_dashboard(user=user),
        "request": context["request"],
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("rubrics/_home_reviewer.html", takes_context=True)
def reviewer_queue_panel(context):
    user = context["request"].user
    return {
        "queue": selectors.reviewer_queue(user=user),
        "is_researcher": user_has_role(user, Role.RESEARCHER),
        "request": context["request"],
        "csrf_token": context.get("csrf_token"),
    }
