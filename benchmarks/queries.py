"""How many database round trips each request made (statements, and BEGIN and COMMIT, as
the tests count them) and how long the application took over it, sent back in response
headers for benchmarks/survey_load.py to print beside each step's latency (which also holds
the wait for a free gunicorn thread). Only benchmarks/settings.py installs it; never the
product."""

import time

from django.db import connection

HEADER = "X-Bench-Queries"
SERVER_MS = "X-Bench-Server-Ms"


def count_queries(get_response):
    def middleware(request):
        # The debug cursor logs what the request ran (a few microseconds a statement); the
        # log is this thread's connection's, emptied per request.
        connection.force_debug_cursor = True
        connection.queries_log.clear()
        started = time.perf_counter()
        try:
            response = get_response(request)
        finally:
            connection.force_debug_cursor = False
        response[SERVER_MS] = f"{(time.perf_counter() - started) * 1000:.1f}"
        response[HEADER] = str(len(connection.queries_log))
        connection.queries_log.clear()
        return response

    return middleware
