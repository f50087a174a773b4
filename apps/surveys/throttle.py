"""Rate limits for the pages anyone can reach: a fixed one-minute window counted in Redis.

Counted per client address, shared by every web process. Prolific participants behind one
campus or company NAT share an address, so the default limit is generous; it is there to
stop a script hammering the survey, not a person. If Redis does not answer, requests pass:
a participant is not turned away for an outage of the limiter.
"""

import logging
import threading
import time
from functools import wraps

import redis
from django.conf import settings
from django.shortcuts import render

log = logging.getLogger(__name__)
_client: redis.Redis | None = None
_client_lock = threading.Lock()


def _redis() -> redis.Redis:
    """One client (one connection pool) per process. Made under a lock: a second client made
    by a racing thread would replace the first, whose pool is then closed when it is
    collected, under the requests still using it."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5)
    return _client


def allow(scope: str, key: str, per_minute: int) -> bool:
    window = int(time.time() // 60)
    name = f"assay:ratelimit:{scope}:{key}:{window}"
    try:
        pipe = _redis().pipeline(transaction=False)
        pipe.incr(name)
        pipe.expire(name, 120)
        count, _ = pipe.execute()
    except redis.RedisError as exc:
        log.warning("rate limiter unavailable, letting the request through: %s", exc)
        return True
    return count <= per_minute


def client_address(request) -> str:
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def rate_limited(scope: str):
    """Answer 429 once an address has made SURVEY_RATE_LIMIT_PER_MINUTE requests this minute."""

    def decorator(view):
        @wraps(view)
        def limited(request, *args, **kwargs):
            limit = settings.SURVEY_RATE_LIMIT_PER_MINUTE
            if not allow(scope, client_address(request), limit):
                response = render(request, "surveys/participant/slow_down.html", status=429)
                response["Retry-After"] = "60"
                return response
            return view(request, *args, **kwargs)

        return limited

    return decorator
