"""Fixtures of the API's tests: a researcher's token, a test client that sends it, and the
seeded world every endpoint has something to show from (tests/api/builders.py)."""

import pytest
from django.test import Client

from apps.accounts.roles import Role
from tests.api.builders import bearer, token_for, world_make
from tests.factories import user_with_role


@pytest.fixture
def api_researcher(db):
    return user_with_role(Role.RESEARCHER, username="api-researcher")


@pytest.fixture
def api_key(api_researcher):
    return token_for(api_researcher)


@pytest.fixture
def api(api_key):
    """A test client that sends a researcher's token with every request."""
    return Client(**bearer(api_key))


@pytest.fixture
def world(db, offline_provider_url, make_study):
    return world_make(offline_provider_url, make_study)
