"""Scenario context as readable HTML: JSON objects as definition lists, lists as lists.

Nothing is reworded or reordered: keys and strings appear as in the record, numbers as the
record spells them (privacylens.spelled), and every one of them goes through `format_html`,
so markup in a scenario is shown, never run.
"""

import html

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from apps.console.uploads import deeper_than
from apps.surveys.models import StudyKind, UnitKind
from apps.surveys.privacylens import Members, Number, Part, action_input, spelled, trajectory_steps

register = template.Library()
MAX_DEPTH = 12
# An observation longer than this is folded (a <details>, closed): on a phone the first
# scenario of the demo was ten screens of tool output before its first question.
FOLD_CHARACTERS = 600
FOLD_LINES = 15


def json_html(value) -> SafeString:
    if isinstance(value, Members):
        if not value:
            return mark_safe('<span class="json-literal">{}</span>')
        rows = format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((k, json_html(v)) for k, v in value))
        return format_html('<dl class="json-object">{}</dl>', rows)
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="json-literal">[]</span>')
        rows = format_html_join("", "<li>{}</li>", ((json_html(v),) for v in value))
        return format_html('<ol class="json-list">{}</ol>', rows)
    if isinstance(value, str):
        return format_html('<span class="json-string">{}</span>', value)
    if isinstance(value, Number):
        return format_html('<span class="json-literal">{}</span>', value.text)
    literal = {True: "true", False: "false", None: "null"}[value]
    return format_html('<span class="json-literal">{}</span>', literal)


@register.simple_tag
def json_block(part: Part | None) -> SafeString:
    """A step's input or observation: structured when it is JSON, verbatim text otherwise
    (also when it nests deeper than a page can indent)."""
    if part is None:
        return mark_safe("")
    if part.is_json and deeper_than(part.data, max_depth=MAX_DEPTH) is None:
        return json_html(spelled(part.text))
    return format_html('<pre class="json-text">{}</pre>', part.text)


@register.filter
def fold_size(part: Part | None) -> str:
    """How long a step's observation is ("2,310 characters") when it is long enough to be
    shown folded; "" otherwise."""
    if part is None:
        return ""
    if len(part.text) > FOLD_CHARACTERS or part.text.count("\n") >= FOLD_LINES:
        return f"{len(part.text):,} characters"
    return ""


@register.filter(name="action_input")
def action_input_filter(text: str) -> Part | None:
    return action_input(text)


@register.filter
def steps(trajectory: str):
    return trajectory_steps(trajectory)


# What participants call a unit's page. A study of answers mixes answers and pairs of them:
# "Page 2 of 5" reads right for both, where "Answer 2" would clash with "Answer A".
@register.filter
def shows_answers(study) -> bool:
    return study.kind == StudyKind.ANSWERS


@register.filter
def page_noun(study) -> str:
    return "page" if study.kind == StudyKind.ANSWERS else "scenario"


@register.filter
def unit_noun(study) -> str:
    """What researchers' pages call a study's units: scenarios, or units (answers and pairs)."""
    return "unit" if study.kind == StudyKind.ANSWERS else "scenario"


@register.filter
def unit_heading(unit) -> str:
    """An answer unit's page heading: what the participant is asked to do."""
    return "Compare two answers" if unit.kind == UnitKind.PAIR else "Rate this answer"


# Participants' pages show up to 35 radio buttons and 7 text boxes a page. Django renders every
# radio button through two templates (about 0.2 ms each); these tags write the same markup in
# one pass from the same data (the widgets' own contexts: names, ids, values, checked, required,
# aria-invalid). tests/surveys/test_widgets.py holds them to Django's output.


def _esc(value) -> str:
    """conditional_escape, as a plain str (the tags below join many of them)."""
    return value.__html__() if hasattr(value, "__html__") else html.escape(str(value))


def _attrs(attrs: dict) -> str:
    """django/forms/widgets/attrs.html."""
    return "".join(
        f" {_esc(name)}" if value is True else f' {_esc(name)}="{_esc(value)}"'
        for name, value in attrs.items()
        if value is not False and value is not None
    )


@register.simple_tag
def radio_choices(field) -> SafeString:
    """What `{% for radio in field %}<label class="choice" for="{{ radio.id_for_label }}">
    {{ radio.tag }}<span>{{ radio.choice_label }}</span></label>{% endfor %}` renders."""
    parts = []
    for radio in field:
        data = radio.data
        value = "" if data["value"] is None else f' value="{_esc(data["value"])}"'
        parts.append(
            f'<label class="choice" for="{_esc(radio.id_for_label)}"><input type="'
            f'{_esc(data["type"])}" name="{_esc(data["name"])}"{value}{_attrs(data["attrs"])}>'
            f"<span>{_esc(radio.choice_label)}</span></label>"
        )
    return mark_safe("".join(parts))  # noqa: S308 - every part escaped above


@register.simple_tag
def textarea(field) -> SafeString:
    """What `{{ field }}` renders for a Textarea."""
    widget = field.field.widget
    attrs = field.build_widget_attrs({}, widget)
    if field.auto_id and "id" not in widget.attrs:
        attrs.setdefault("id", field.auto_id)
    data = widget.get_context(field.html_name, field.value(), attrs)["widget"]
    return mark_safe(  # noqa: S308 - every part escaped
        f'<textarea name="{_esc(data["name"])}"{_attrs(data["attrs"])}>\n'
        f"{_esc(data['value'] or '')}</textarea>"
    )
