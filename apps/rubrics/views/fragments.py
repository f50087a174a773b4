"""Rendering a page's named partials as an HTMX response.

A page and its fragments share one template (django-template-partials). An HTMX response
is the main fragment (swapped into the request's target) followed by any out-of-band
fragments, which carry `hx-swap-oob` because they are rendered with `oob=True`.
"""

from django.http import HttpResponse
from django.template.loader import render_to_string


def fragments(
    request,
    template: str,
    context: dict,
    *,
    main: str | None = None,
    oob: tuple[str, ...] = (),
    status: int = 200,
    reswap: str | None = None,
) -> HttpResponse:
    parts = []
    if main:
        parts.append(render_to_string(f"{template}#{main}", {**context, "oob": False}, request))
    for name in oob:
        parts.append(render_to_string(f"{template}#{name}", {**context, "oob": True}, request))
    response = HttpResponse("".join(parts), status=status)
    if reswap:
        response["HX-Reswap"] = reswap
    return response
