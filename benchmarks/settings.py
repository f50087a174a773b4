"""Production settings plus the benchmark's baseline view (benchmarks/urls.py). Never used by
the product: only benchmarks/survey_load.py starts gunicorn with this module."""

import importlib.util
from pathlib import Path

# Read config/settings.py by path: importing the `config` package would start the Celery
# app, which reads these very settings before they exist.
_spec = importlib.util.spec_from_file_location(
    "assay_product_settings", Path(__file__).resolve().parent.parent / "config" / "settings.py"
)
_product = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_product)
globals().update({name: value for name, value in vars(_product).items() if name.isupper()})

ROOT_URLCONF = "benchmarks.urls"
# First, so that it counts what every other middleware runs too.
MIDDLEWARE = ["benchmarks.queries.count_queries", *MIDDLEWARE]  # noqa: F821 (from _product)
