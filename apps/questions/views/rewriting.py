from apps.accounts.roles import Role, role_required


@role_required(Role.RESEARCHER)
def rewrites(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def review(request, pk):
    raise NotImplementedError
