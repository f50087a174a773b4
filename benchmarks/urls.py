"""The product's URLs plus a minimal view that inserts one row: the baseline that answer
saves are measured against, in the same server and the same run."""

from django.db import connection
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from apps.accounts.roles import public
from config.urls import urlpatterns as product

BASELINE_TABLE = "bench_baseline"


@public
@csrf_exempt
@require_POST
def baseline(request):
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {BASELINE_TABLE} (value, created_at) VALUES (%s, now())",  # noqa: S608
            [request.POST.get("value", "")],
        )
    return HttpResponse("ok")


urlpatterns = [*product, path("bench/baseline/", baseline, name="bench-baseline")]
