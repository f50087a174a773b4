from apps.accounts.roles import Role, role_required


@role_required(Role.RESEARCHER)
def bank(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def bank_csv(request):
    raise NotImplementedError


@role_required(Role.RESEARCHER)
def bank_json(request):
    raise NotImplementedError
