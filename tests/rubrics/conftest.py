import pytest

from apps.accounts.roles import Role
from tests.conftest import fast_password_hashing
from tests.factories import user_with_role
from tests.llm.offline_fixture import offline_provider, offline_provider_url

__all__ = ["fast_password_hashing", "offline_provider", "offline_provider_url"]


@pytest.fixture
def expert(db):
    return user_with_role(Role.EXPERT, first_name="Erin", last_name="Expert")


@pytest.fixture
def expert2(db):
    return user_with_role(Role.EXPERT, first_name="Emeka", last_name="Expert")


@pytest.fixture
def reviewer(db):
    return user_with_role(Role.REVIEWER, first_name="Rosa", last_name="Reviewer")


@pytest.fixture
def researcher(db):
    return user_with_role(Role.RESEARCHER, first_name="Rahul", last_name="Researcher")


@pytest.fixture
def migrated_rows(transactional_db):
    """A transactional test whose seeded rows (topics, prompts, shared criteria) are present:
    `tests/conftest.py::seeded_rows` puts them back after an earlier test's flush."""
