from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.accounts.roles import public

from . import selectors


@public
@never_cache
@require_GET
def healthz(request):
    """Liveness for load balancers: the database and the broker answer (503 otherwise).

    The worker heartbeat's age is reported but does not fail the check: a web node is
    healthy while workers scale to zero.
    """
    db_ok, db_detail = selectors.database_ok()
    broker_ok, broker_detail = selectors.broker_ok()
    beat = selectors.last_heartbeat() if db_ok else None
    body = {
        "status": "ok" if db_ok and broker_ok else "error",
        "database": db_detail,
        "broker": broker_detail,
        "worker_heartbeat_age_seconds": (
            round((timezone.now() - beat.seen_at).total_seconds()) if beat else None
        ),
    }
    return JsonResponse(body, status=200 if db_ok and broker_ok else 503)


@public
@require_GET
def favicon(request):
    """Browsers ask for /favicon.ico before reading a page's <link rel="icon"> (and for
    responses that have none, such as JSON): send them to the icon the pages name."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
