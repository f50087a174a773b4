from apps.accounts.roles import Role, role_required


@role_required(Role.RESEARCHER)
def queue(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def decide(request, pk):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def dashboard(request):
    raise NotImplementedError
