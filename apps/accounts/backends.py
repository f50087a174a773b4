from django.contrib.auth.backends import ModelBackend

from .roles import Role, user_has_role


class RoleBackend(ModelBackend):
    """Researchers own the console: every model permission is theirs.

    Django's admin asks for per-model permissions; granting them through the role rather
    than copying permission rows into the group means a model added later is covered
    without a migration.
    """

    def has_perm(self, user_obj, perm, obj=None):
        if user_has_role(user_obj, Role.RESEARCHER):
            return True
        return super().has_perm(user_obj, perm, obj)

    def has_module_perms(self, user_obj, app_label):
        if user_has_role(user_obj, Role.RESEARCHER):
            return True
        return super().has_module_perms(user_obj, app_label)
