"""The samples page: every sample drawn, with its screening progress, and the draw form."""

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from apps.accounts.roles import Role, role_required
from apps.console.form_fields import BIGINT_MAX

from ..errors import QuestionError
from ..models import Topic
from ..selectors.sampling import samples_list
from ..services.sampling import MAX_SIZE, samples_draw

PAGE_SIZE = 25


class DrawForm(forms.Form):
    topic = forms.ModelChoiceField(
        Topic.objects.order_by("order", "name"),
        required=False,
        empty_label="All topics (one sample each)",
    )
    size = forms.IntegerField(
        min_value=1, max_value=MAX_SIZE, initial=100, help_text="Posts per topic."
    )
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="Leave blank for a random seed (it is recorded). The same seed over the same "
        "pool draws the same posts.",
    )


@role_required(Role.RESEARCHER)
def samples(request):
    form = DrawForm(request.POST or None, initial={"size": 100})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        topics = [data["topic"]] if data["topic"] else list(Topic.objects.order_by("order"))
        try:
            report = samples_draw(
                topics=topics, size=data["size"], seed=data["seed"], user=request.user
            )
        except QuestionError as exc:
            form.add_error(None, str(exc))
        else:
            level = messages.WARNING if report.refused else messages.SUCCESS
            messages.add_message(request, level, report.summary())
            return redirect("questions:samples")
    page = Paginator(samples_list(), PAGE_SIZE).get_page(request.GET.get("page"))
    status = 422 if form.errors else 200
    return render(request, "questions/samples.html", {"form": form, "page": page}, status=status)
