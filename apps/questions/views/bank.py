"""The question bank's page (list and filter, the rewrite metrics' means) and its two
exports, CSV and `assay-questions/1` JSON, both of exactly the questions the filters select."""

import json

from django import forms
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.accounts.roles import Role, role_required
from apps.console.csv_export import csv_rows

from ..interchange import questions_document
from ..models import LabelStatus, LengthBucket, Topic
from ..selectors import bank as selectors
from ..selectors.embedding_cosines import embedding_cosine_means
from ..similarity import PUBLISHED_COSINE_MEAN, PUBLISHED_TRIGRAM_MEAN

researcher = role_required(Role.RESEARCHER)
PER_PAGE = 50
ANY = [("", "Any")]
# A need filter: "no" is a question labelled as not asking for it (not an unlabelled one).
NEEDED = [("", "Either"), ("yes", "Asked for"), ("no", "Not asked for")]
YES_NO = {"yes": True, "no": False}
PUBLISHED = {"cosine": PUBLISHED_COSINE_MEAN, "trigram": PUBLISHED_TRIGRAM_MEAN}


class BankFilterForm(forms.Form):
    topic = forms.ModelChoiceField(Topic.objects.all(), required=False, empty_label="Any")
    length_bucket = forms.ChoiceField(
        choices=ANY + LengthBucket.choices, required=False, label="Length"
    )
    prior_attempt = forms.ChoiceField(
        choices=[("", "Either"), ("yes", "Mentions one"), ("no", "Mentions none")],
        required=False,
        label="Prior attempt",
    )
    sensemaking = forms.ChoiceField(choices=NEEDED, required=False, label="Sensemaking")
    guidance = forms.ChoiceField(choices=NEEDED, required=False, label="Guidance")
    label_status = forms.ChoiceField(
        choices=ANY + LabelStatus.choices, required=False, label="Labels"
    )
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search"}),
    )

    def questions(self, *, viewer):
        self.is_valid()  # a filter that does not parse is left out; the others apply
        data = self.cleaned_data
        return selectors.bank_questions(
            viewer=viewer,
            topic=data.get("topic"),
            length_bucket=data.get("length_bucket", ""),
            prior_attempt=YES_NO.get(data.get("prior_attempt")),
            needs_sensemaking=YES_NO.get(data.get("sensemaking")),
            needs_guidance=YES_NO.get(data.get("guidance")),
            label_status=data.get("label_status", ""),
            search=data.get("q", ""),
        )


def _query(request) -> str:
    """The filters of the request, to carry into page links and exports."""
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


@researcher
@require_GET
def bank(request):
    form = BankFilterForm(request.GET)
    questions = form.questions(viewer=request.user)
    page = Paginator(questions.select_related("labelled_by", "verified_by"), PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "form": form,
        "page": page,
        "query": _query(request),
        "published": PUBLISHED,
        "means": selectors.rewrite_metrics_means(questions=questions),
        "embedding_means": embedding_cosine_means(questions=questions),
    }
    template = "questions/bank.html#results" if request.htmx else "questions/bank.html"
    return render(request, template, context)


def _stamp() -> str:
    return timezone.now().strftime("%Y%m%d-%H%M%S")


@researcher
@require_GET
def bank_csv(request):
    questions = BankFilterForm(request.GET).questions(viewer=request.user)
    rows = selectors.bank_export_rows(questions=questions)
    response = StreamingHttpResponse(
        csv_rows(selectors.BANK_EXPORT_HEADER, rows), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="questions-{_stamp()}.csv"'
    return response


@researcher
@require_GET
def bank_json(request):
    questions = BankFilterForm(request.GET).questions(viewer=request.user)
    document = questions_document(questions=questions.iterator(chunk_size=2000))
    response = HttpResponse(
        json.dumps(document, ensure_ascii=False, indent=1),
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="questions-{_stamp()}.json"'
    return response
