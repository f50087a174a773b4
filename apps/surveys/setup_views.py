"""Setting up studies on the researcher's pages: importing PrivacyLens scenarios and
responses, and each study's survey items. The console keeps the same rows for bulk edits
and exports."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render

from apps.accounts.roles import Role, role_required

from . import selectors
from .errors import SurveyError
from .forms import ImportForm
from .models import ResponseSource, Scenario, ScenarioResponse, Study, SurveyItem
from .services import survey_file_import, survey_item_save
from .setup_forms import SurveyItemForm


@role_required(Role.RESEARCHER)
def scenario_import(request):
    """Scenarios (PrivacyLens JSON) or responses (CSV), each imported whole or not at all."""
    posted = request.method == "POST"  # bound even when sent empty (no file chosen)
    form = ImportForm(request.POST, request.FILES) if posted else ImportForm()
    refused = None
    if posted and form.is_valid():
        upload = form.cleaned_data["file"]  # its size was checked before it is read
        data, name = upload.read(), upload.name
        try:
            note = survey_file_import(
                kind=form.cleaned_data["kind"],
                text=data,
                filename=name,
                study=form.cleaned_data["study"],
                user=request.user,
            )
        except SurveyError as exc:
            refused = {"filename": name, "problems": getattr(exc, "problems", [str(exc)])}
        else:
            messages.success(request, note)
            return redirect("surveys:setup_import")
    context = {
        "form": form,
        "refused": refused,
        "recent": selectors.scenario_imports_recent(),
        "scenario_count": Scenario.objects.count(),
        "response_count": ScenarioResponse.objects.filter(source=ResponseSource.IMPORTED).count(),
    }
    status = 422 if refused or form.errors else 200
    return render(request, "surveys/setup_import.html", context, status=status)


@role_required(Role.RESEARCHER)
def survey_items(request, study_id: int):
    """A study's survey items, and the form that adds one while nobody has answered."""
    study = get_object_or_404(Study, pk=study_id)
    return _item_page(request, study, SurveyItem(study=study))


@role_required(Role.RESEARCHER)
def survey_item_edit(request, study_id: int, item_id: int):
    study = get_object_or_404(Study, pk=study_id)
    item = get_object_or_404(SurveyItem, pk=item_id, study=study)
    return _item_page(request, study, item)


def _item_page(request, study: Study, item: SurveyItem):
    frozen = selectors.study_items_frozen(study=study)
    form = SurveyItemForm(request.POST if request.method == "POST" else None, instance=item)
    if request.method == "POST" and form.is_valid():
        try:
            saved = survey_item_save(item=form.save(commit=False))
        except SurveyError as exc:
            form.add_error(None, str(exc))
        except ValidationError as exc:  # checks the form cannot see: one code per study
            form.add_error(None, exc)
        else:
            messages.success(request, f"Item {saved.code} saved.")
            return redirect("surveys:setup_items", study_id=study.pk)
    context = {
        "study": study,
        "item": item if item.pk else None,
        "items": study.items.all(),
        "frozen": frozen,
        "form": form,
    }
    template = "surveys/setup_items.html" if item.pk is None else "surveys/setup_item.html"
    return render(request, template, context, status=422 if form.errors else 200)
