import factory

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.accounts.services import user_set_roles

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    first_name = factory.Faker("first_name")
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create:
            user_set_roles(user=self, roles=list(extracted or []))


def user_with_role(role: Role | None, **kwargs) -> User:
    return UserFactory(roles=[role] if role else [], **kwargs)
