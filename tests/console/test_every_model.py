"""Every model of Assay's apps is in the researcher's console, listable and exportable as
CSV, so that no table the product writes is out of a researcher's reach."""

import csv
import io

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from apps.accounts.roles import Role
from apps.console.csv_export import csv_columns

pytestmark = pytest.mark.django_db

# Models of apps.* that are deliberately not in the console, each with its reason.
NOT_IN_CONSOLE: dict[str, str] = {}


def domain_models():
    for config in apps.get_app_configs():
        if config.name.startswith("apps."):
            yield from config.get_models()


def test_every_model_of_every_app_is_in_the_console_with_the_export_action(rf, researcher):
    request = rf.get("/admin/")
    request.user = researcher
    missing, unexportable = [], []
    for model in domain_models():
        if model._meta.label in NOT_IN_CONSOLE:
            continue
        model_admin = admin.site._registry.get(model)
        if model_admin is None:
            missing.append(model._meta.label)
        elif "export_as_csv" not in model_admin.get_actions(request):
            unexportable.append(model._meta.label)
    assert not missing, f"not in the console: {missing}"
    assert not unexportable, f"in the console without the CSV export: {unexportable}"
    assert len(list(domain_models())) > 50


def test_the_allow_list_names_only_real_models_with_a_reason():
    labels = {model._meta.label for model in domain_models()}
    for label, reason in NOT_IN_CONSOLE.items():
        assert label in labels and len(reason) > 20, label


@pytest.mark.parametrize("model", list(domain_models()), ids=lambda m: m._meta.label)
def test_every_console_list_opens_and_its_export_has_its_columns(role_client, model):
    client = role_client(Role.RESEARCHER)
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    page = client.get(url)
    assert page.status_code in (200, 302), page.content[:300]  # 302: a one-row settings page
    response = client.post(
        url, {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
    )
    if page.status_code == 302:
        return
    assert response.status_code == 200 and response.streaming
    header = next(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(header) == len(csv_columns(admin.site._registry[model]))
    # Headers read as columns, not as the queries that fetch them, and none twice.
    assert not [name for name in header if "__" in name] and len(set(header)) == len(header)
