from apps.accounts.roles import Role, role_required


@role_required(Role.RESEARCHER)
def samples(request):
    raise NotImplementedError
