"""The answer viewer of a grading run: every answer beside its question, score and each
criterion's verdict with the grader's explanation, filtered by what the query names (so that
a report's cell links to the answers behind it), one answer at a time, with the URL naming
the answer shown. Query parameters are in docs/runs-and-grading.md."""

from urllib.parse import urlencode

from django import forms
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers

from apps.accounts.roles import Role, role_required
from apps.console.form_fields import IdField
from apps.questions.models import Question, Topic
from apps.rubrics.models import Criterion, Kind, Polarity

from ..bands import BANDS, NAMED, band_get
from ..models import GradingRun
from ..selectors import answers as selectors
from ..selectors.calibration import rater_withheld
from ..selectors.runs import SCORING_RULE

PAGE_SIZE = 50
TOPIC_MAX_CHARS = 40  # a topic's slug


class AnswerFilterForm(forms.Form):
    """The viewer's query; a value that does not parse is left out, as if not given."""

    model = IdField(required=False)
    topic = forms.CharField(required=False, max_length=TOPIC_MAX_CHARS)  # slug or id
    question = IdField(required=False)
    band = forms.ChoiceField(choices=[(k, b.label) for k, b in BANDS.items()], required=False)
    criterion = IdField(required=False)
    verdict = forms.ChoiceField(
        choices=[(k, label) for k, (label, _q) in selectors.VERDICTS.items()], required=False
    )
    kind = forms.ChoiceField(choices=Kind.choices, required=False)
    polarity = forms.ChoiceField(choices=Polarity.choices, required=False)
    sort = forms.ChoiceField(
        choices=[(k, label) for k, (label, _o) in selectors.SORTS.items()], required=False
    )
    answer = IdField(required=False)

    def value(self, name: str):
        self.is_valid()
        return self.cleaned_data.get(name) or None


def _topic(value: str | None) -> Topic | None:
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return Topic.objects.filter(pk=int(value)).first() if len(value) < 19 else None
    return Topic.objects.filter(slug=value).first()


def _filters(form: AnswerFilterForm) -> selectors.AnswerFilters:
    return selectors.AnswerFilters(
        model=form.value("model"),
        topic=_topic(form.value("topic")),
        question=form.value("question"),
        band=band_get(form.value("band") or ""),
        criterion=form.value("criterion"),
        verdict=form.value("verdict") or "",
        kind=form.value("kind") or "",
        polarity=form.value("polarity") or "",
        sort=form.value("sort") or selectors.DEFAULT_SORT,
    )


def _query(filters: selectors.AnswerFilters, **changed) -> str:
    """The filters as a query string, in the names the viewer reads, without defaults."""
    values = {
        "model": filters.model,
        "topic": filters.topic.slug if filters.topic else None,
        "question": filters.question,
        "band": filters.band.key if filters.band else None,
        "criterion": filters.criterion,
        "verdict": filters.verdict,
        "kind": filters.kind,
        "polarity": filters.polarity,
        "sort": "" if filters.sort == selectors.DEFAULT_SORT else filters.sort,
    } | changed
    return urlencode({k: v for k, v in values.items() if v})


FILTERS = ("model", "topic", "question", "band", "criterion", "verdict", "kind", "polarity")


@role_required(Role.RESEARCHER)
def answers(request, pk: int):
    run = get_object_or_404(GradingRun.objects.select_related("grader", "sampling_run"), pk=pk)
    form = AnswerFilterForm(request.GET)
    filters = _filters(form)
    rows = selectors.answers_list(run=run, filters=filters, viewer=request.user)
    wanted = form.value("answer")
    place = selectors.answer_place(rows, answer_id=wanted) if wanted else None
    paginator = Paginator(selectors.answers_page(rows, run=run), PAGE_SIZE)
    page = paginator.get_page(
        (place.position - 1) // PAGE_SIZE + 1 if place else request.GET.get("page")
    )
    shown_id = wanted if place else None
    if place is None and len(page):  # no answer named, or not in the list: the page's first
        shown_id = page[0].pk
        place = selectors.answer_place(rows, answer_id=shown_id)
    context = {
        "run": run,
        "page": page,
        "place": place,
        "shown": shown_id and selectors.answer_shown(run=run, answer_id=shown_id, filters=filters),
        "not_found": bool(wanted) and shown_id != wanted,
        "withheld": rater_withheld(viewer=request.user, sampling_run_id=run.sampling_run_id),
        **_choices(run, filters),
    }
    fragment = request.htmx and not request.htmx.history_restore_request
    response = render(
        request, "grading/answers.html#viewer" if fragment else "grading/answers.html", context
    )
    if fragment:  # the history keeps the filters in the viewer's names and the answer shown
        response["HX-Push-Url"] = request.path + (
            f"{context['link']}answer={shown_id}" if shown_id else context["link"].rstrip("?&")
        )
    # One URL answers with a page and, to htmx, with its fragment: caches keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


def _choices(run: GradingRun, filters: selectors.AnswerFilters) -> dict:
    """The filters as the form shows them and the links keep them."""
    criterion = (
        Criterion.objects.select_related("rubric__question").filter(pk=filters.criterion).first()
        if filters.criterion
        else None
    )
    query = _query(filters)
    judged = _query(
        filters, **dict.fromkeys(("criterion", "question", "verdict", "kind", "polarity"))
    )
    return {
        "filters": filters,
        # Each answer's link is `link` followed by answer=<id> (or page=<n>).
        "link": f"?{query}&" if query else "?",
        "judged_link": f"?{judged}&" if judged else "?",
        "filtered": bool(_query(filters, sort=None)),
        "unfiltered": _query(filters, **dict.fromkeys(FILTERS)),
        "without_chosen": _query(filters, criterion=None, question=None),
        "criterion": criterion,
        "question": Question.objects.filter(pk=filters.question).first()
        if filters.question
        else None,
        "models": run.sampling_run.model_configs.all(),
        "topics": Topic.objects.all(),
        "bands": NAMED,
        "verdicts": [(k, label) for k, (label, _q) in selectors.VERDICTS.items()],
        "sorts": [(k, label) for k, (label, _o) in selectors.SORTS.items()],
        "kinds": Kind.choices,
        "polarities": Polarity.choices,
        "scoring_rule": SCORING_RULE,
    }
