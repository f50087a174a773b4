"""A Python client generated from the live schema by openapi-python-client, as a notebook's
author would make one: the generator parses every schema and operation without a warning,
and the client reads every list of the API (the long lists in both layouts), following
`next`, into its models, each value of its schema's type."""

import importlib
import json
import pkgutil
import subprocess
import sys
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from dateutil.parser import isoparse

from apps.surveys.services import proxy_run_create
from config.api import router
from tests.api.builders import token_for, world_make
from tests.factories import ModelConfigFactory

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "assay_client"
PAGE_SIZE = 3  # small, so that every list with more rows is read over several pages
PRIMITIVES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


def client_generate(schema: bytes, where: Path):
    """The client package generated from `schema` into `where`, imported."""
    (where / "openapi.json").write_bytes(schema)
    (where / "generator.yml").write_text("post_hooks: []\n")  # imported, never formatted
    result = subprocess.run(
        [
            GENERATOR,
            "generate",
            "--path",
            where / "openapi.json",
            "--config",
            where / "generator.yml",
            "--meta",
            "none",
            "--output-path",
            where / PACKAGE,
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    for word in ("Warning", "WARNING", "Unable", "Cannot", "omitted"):
        assert word not in said, said
    return importlib.import_module(PACKAGE)


@pytest.fixture
def generated(tmp_path, monkeypatch):
    """`generated(schema)`: the client package; unloaded afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda schema: client_generate(schema, tmp_path)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def resolved(schema: dict, components: dict) -> tuple[str | None, dict]:
    """A property's schema with a reference (alone or in `allOf`) followed: (the
    component's name or None, its schema)."""
    if len(schema.get("allOf", ())) == 1:
        schema = {**schema, **schema["allOf"][0]}
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return name, components[name]
    return None, schema


def assert_typed(value, raw, schema: dict, components: dict, models) -> None:
    """`value`, as the client read it, is `raw` (the JSON the API sent) as the type that
    `schema` states: a model of the component it names, an enum's member, a date-time, a
    whole number, and so on, through nested models and lists."""
    if "anyOf" in schema or len(schema.get("oneOf", ())) > 1:
        failures = []
        for member in schema.get("anyOf") or schema["oneOf"]:
            try:
                assert_typed(value, raw, member, components, models)
                return
            except AssertionError as exc:
                failures.append(str(exc))
        raise AssertionError(f"{value!r} is none of its types: {failures}")
    name, schema = resolved(schema, components)
    if raw is None:
        assert value is None
        return
    if "enum" in schema:
        assert isinstance(value, Enum), (name, value)
        assert value.value == raw
    elif schema.get("type") == "object" and "properties" in schema:
        assert isinstance(value, getattr(models, name)), (name, value)
        assert set(raw) <= set(schema["properties"]), f"{name}: keys not in the schema"
        assert set(schema.get("required", ())) <= set(raw)
        for key, item in raw.items():
            attribute = key if hasattr(value, key) else f"{key}_"
            assert_typed(
                getattr(value, attribute), item, schema["properties"][key], components, models
            )
        assert value.additional_properties == {}
    elif schema.get("type") == "array":
        assert isinstance(value, list) and len(value) == len(raw)
        for one, item in zip(value, raw, strict=True):
            assert_typed(one, item, schema["items"], components, models)
    elif schema.get("format") == "date-time":
        assert isinstance(value, datetime) and value == isoparse(raw), (value, raw)
    elif schema.get("format") == "date":
        assert isinstance(value, date) and value == isoparse(raw).date(), (value, raw)
    elif schema.get("type") in PRIMITIVES:
        assert isinstance(value, PRIMITIVES[schema["type"]]), (schema, value)
        assert not isinstance(value, bool) or schema["type"] == "boolean"
        assert value == raw
    else:  # free-form JSON (a run's parameters): as sent
        assert value == raw or value.to_dict() == raw, (schema, value)


def list_modules(package) -> dict:
    """The generated list operations' modules, by operation id."""
    api = importlib.import_module(f"{package.__name__}.api")
    found = pkgutil.walk_packages(api.__path__, f"{api.__name__}.")
    return {
        info.name.rsplit(".", 1)[1]: importlib.import_module(info.name)
        for info in found
        if info.name.endswith("_list")
    }


def walk(operation, client, **query) -> list:
    """Every page of a list, through the generated operation, following `next`:
    (parsed page, the JSON it was read from) pairs."""
    pages, cursor = [], None
    while True:
        extra = {} if cursor is None else {"cursor": cursor}
        answer = operation.sync_detailed(client=client, page_size=PAGE_SIZE, **query, **extra)
        assert answer.status_code == 200, answer.content
        raw = json.loads(answer.content)
        pages.append((answer.parsed, raw))
        if raw["next"] is None:
            return pages
        (cursor,) = parse_qs(urlsplit(raw["next"]).query)["cursor"]


def test_a_generated_client_reads_every_list_into_typed_models(
    live_server, offline_provider_url, make_study, generated
):
    world = world_make(offline_provider_url, make_study)
    proxy_run_create(study=world.study, models=[ModelConfigFactory()], runs_per_model=1)
    key = token_for(world.researcher)
    schema_answer = httpx.get(
        f"{live_server.url}/api/schema/?format=json",
        headers={"Authorization": f"Bearer {key}"},
    ).raise_for_status()
    schema = schema_answer.json()
    components = schema["components"]["schemas"]
    package = generated(schema_answer.content)
    models = importlib.import_module(f"{PACKAGE}.models")
    client = package.AuthenticatedClient(
        base_url=live_server.url, token=key, raise_on_unexpected_status=True
    )

    lists = {
        f"/api/v1/{prefix}/": (prefix, viewset) for prefix, viewset, _basename in router.registry
    }
    modules = list_modules(package)
    assert len(lists) == 14
    for path, (prefix, viewset) in lists.items():
        operation = schema["paths"][path]["get"]
        module = modules[operation["operationId"]]
        page_schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        layouts = {}
        for reference in page_schema.get("oneOf") or [page_schema]:
            _name, page = resolved(reference, components)
            layouts["columns" if "columns" in page["properties"] else "results"] = reference

        rows = []
        for parsed, raw in walk(module, client):
            assert_typed(parsed, raw, layouts["results"], components, models)
            rows.extend(raw["results"])
        ids = [row["id"] for row in rows]
        assert ids == sorted(viewset.queryset.model.objects.values_list("pk", flat=True))
        assert ids, f"{prefix}: no rows to read"

        if "columns" not in layouts:
            continue
        layout = type(module.sync_detailed.__kwdefaults__["layout"])  # the operation's enum
        read = []
        for parsed, raw in walk(module, client, layout=layout("arrays")):
            assert parsed.columns == list(viewset.columns.keys)
            assert_typed(parsed, raw, layouts["columns"], components, models)
            read.extend(dict(zip(parsed.columns, row, strict=True)) for row in parsed.rows)
        assert len(read) == len(rows) > PAGE_SIZE
        _name, arrays = resolved(layouts["columns"], components)
        value = arrays["properties"]["rows"]["items"]["items"]
        for values, row in zip(read, rows, strict=True):
            assert values.keys() == row.keys()
            for key, item in values.items():
                assert_typed(item, row[key], value, components, models)
