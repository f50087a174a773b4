"""The models Assay can call, on the researcher's pages: list, add, edit. The console keeps
them too, for bulk edits and exports."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from apps.accounts.roles import Role, role_required

from .forms import ModelConfigForm
from .models import ModelConfig


@role_required(Role.RESEARCHER)
def model_list(request):
    models = ModelConfig.objects.order_by("-active", "display_name")
    return render(request, "llm/setup_models.html", {"models": models})


@role_required(Role.RESEARCHER)
def model_new(request):
    return _model_page(request, ModelConfig())


@role_required(Role.RESEARCHER)
def model_edit(request, pk: int):
    return _model_page(request, get_object_or_404(ModelConfig, pk=pk))


def _model_page(request, model: ModelConfig):
    form = ModelConfigForm(request.POST if request.method == "POST" else None, instance=model)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"{saved.display_name} saved.")
        return redirect("llm:setup_models")
    context = {"form": form, "model": model if model.pk else None}
    return render(request, "llm/setup_model.html", context, status=422 if form.errors else 200)
