"""Sign-in lockout: django-axes' database handler (settings.AXES_HANDLER) with a second,
higher limit on the address alone, against one password tried on many usernames.

axes counts failures for each combination in AXES_LOCKOUT_PARAMETERS but compares them all
with the one AXES_FAILURE_LIMIT, and a successful sign-in forgets every combination it
matches. Given the address alone as a combination, five typos behind a lab's NAT would lock
the lab out, and anyone with an account could sign in between guesses to wipe the address's
count. So axes keeps the username and address pair, and the address's failures within the
cool-off, over every username, are counted here against SIGN_IN_ADDRESS_FAILURE_LIMIT; a
sign-in forgets only its own pair's.
"""

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum

# Set on the request when the address, not the pair, is locked: the lockout page says which.
ADDRESS_LOCKED = "sign_in_address_locked"


def address_failures(request) -> int:
    """Failed sign-ins from the request's address within the cool-off, whatever the username."""
    attempts = AccessAttempt.objects.filter(ip_address=request.axes_ip_address)
    if get_cool_off(request) is not None:
        attempts = attempts.filter(attempt_time__gte=get_cool_off_threshold(request))
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class SignInLockout(AxesDatabaseHandler):
    def get_failures(self, request, credentials: dict | None = None) -> int:
        failures = super().get_failures(request, credentials)
        limit = get_failure_limit(request, credentials)
        if failures < limit and address_failures(request) >= settings.SIGN_IN_ADDRESS_FAILURE_LIMIT:
            setattr(request, ADDRESS_LOCKED, True)
            # axes compares this one count with AXES_FAILURE_LIMIT, both before checking a
            # password and after a failure: reaching it locks the address out.
            return limit
        return failures
