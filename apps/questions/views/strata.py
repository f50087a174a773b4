from apps.accounts.roles import Role, role_required


@role_required(Role.RESEARCHER)
def labels(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def label(request, pk):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def disputes(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def quotas(request):
    raise NotImplementedError
