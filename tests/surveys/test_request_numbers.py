"""Ids posted by a researcher's form: an odd value is refused with a message, never a 500
(str.isdigit() admits "²", which int() refuses)."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role


@pytest.mark.parametrize("value", ["²", "\u0663"])  # isdigit() says yes to both
def test_approving_odd_participant_ids_asks_for_a_choice(role_client, make_study, value):
    client = role_client(Role.RESEARCHER)
    study = make_study(count=5)
    url = reverse("surveys:study_approve", args=[study.pk])
    page = client.post(url, {"participant": value}, follow=True)
    assert page.status_code == 200
    assert "Choose the submissions to approve." in page.text
