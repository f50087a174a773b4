"""The researcher's pages of answer studies: drawing a new one, and what a study's draw took.
The study itself (texts, items, going live, participants) is on its surveys pages."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from apps.accounts.roles import Role, role_required

from . import selectors, services
from .errors import AnswerStudyError
from .forms import AnswerStudyForm, grading_chosen, per_stratum_chosen, run_chosen

researcher = role_required(Role.RESEARCHER)
FIELDS = tuple(AnswerStudyForm.base_fields)
STUDIES_PER_PAGE = 25


@researcher
@require_GET
def answer_study_list(request):
    """Every answer study, newest first: where its answers came from, and who has rated."""
    page = Paginator(selectors.answer_studies(), STUDIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "answer_studies/list.html", {"page": page})


@researcher
def answer_study_new(request):
    """The form; a POST with action=strata only shows the chosen runs' strata again (htmx on
    every change of a run, or the "Show" button without JavaScript)."""
    status, data = 200, request.POST if request.method == "POST" else None
    if data is not None and data.get("action") == "strata":
        form = AnswerStudyForm(initial={k: data[k] for k in FIELDS if k in data})
        if request.htmx:
            return render(request, "answer_studies/new.html#strata", _strata(form, data))
    elif data is not None:
        form = AnswerStudyForm(data)
        if form.is_valid():
            try:
                study = services.answer_study_create(user=request.user, **form.cleaned_data)
            except AnswerStudyError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Answers drawn. Check the study's texts and items.")
                return redirect("surveys:study_detail", study.pk)
        status = 400
    else:
        form = AnswerStudyForm(initial={k: request.GET[k] for k in FIELDS if k in request.GET})
    source = data if data is not None else request.GET
    return render(request, "answer_studies/new.html", _strata(form, source), status=status)


def _strata(form: AnswerStudyForm, data) -> dict:
    """The form, and the strata of the runs chosen in `data` (none until both are)."""
    run = run_chosen(data.get("sampling_run"))
    grading = grading_chosen(run, data.get("grading_run"))
    initial = AnswerStudyForm.base_fields["answers_per_stratum"].initial
    per_stratum = per_stratum_chosen(data.get("answers_per_stratum", initial))
    strata = selectors.strata_available(grading_run=grading) if grading else []
    return {
        "form": form,
        "grading": grading,
        "per_stratum": per_stratum,
        "rows": selectors.strata_table(strata=strata, per_stratum=per_stratum),
        "available": sum(s.available for s in strata),
        "taken": sum(min(per_stratum or 0, s.available) for s in strata),
    }


@researcher
def answer_draw(request, study_id: int):
    """How a study's answers were drawn, and which model, topic and band each unit is."""
    draw = selectors.draw_of(study_id=study_id)
    if draw is None:
        raise Http404("This study was not drawn from a benchmark's answers.")
    context = {
        "draw": draw,
        "study": draw.study,
        "rows": selectors.strata_recorded(strata=draw.strata),
        "units": selectors.draw_units(study=draw.study),
    }
    return render(request, "answer_studies/draw.html", context)
