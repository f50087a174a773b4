import pytest

from apps.accounts.errors import AccountError
from apps.accounts.roles import Role, user_roles
from apps.accounts.services import user_create, user_set_roles


def test_researchers_are_console_staff_and_others_are_not(db):
    user = user_create(username="r", password="x" * 12, roles=[Role.RESEARCHER])
    assert user.is_staff
    user_set_roles(user=user, roles=[Role.EXPERT])
    assert not user.is_staff
    assert user_roles(user) == {"expert"}


def test_duplicate_username_is_refused(db):
    user_create(username="dup", password="x" * 12)
    with pytest.raises(AccountError, match="already exists"):
        user_create(username="dup", password="x" * 12)


def test_role_groups_exist_after_migrate(db):
    from django.contrib.auth.models import Group

    assert set(Group.objects.values_list("name", flat=True)) >= {"expert", "reviewer", "researcher"}
