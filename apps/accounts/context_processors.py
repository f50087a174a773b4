from .roles import Role, user_roles


def roles(request):
    """`roles` in every template: the signed-in user's role names, for navigation."""
    names = user_roles(request.user) if hasattr(request, "user") else frozenset()
    return {
        "roles": names,
        "is_expert": Role.EXPERT in names,
        "is_reviewer": Role.REVIEWER in names,
        "is_researcher": Role.RESEARCHER in names,
    }
