"""HealthBench interchange: axes and kinds, the scoring note, and rescaling only when the
researcher confirms it."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.questions.models import Topic
from apps.rubrics import interchange, selectors, services
from apps.rubrics.errors import RubricError
from apps.rubrics.interchange import export_healthbench, plan_healthbench
from apps.rubrics.models import Rubric, RubricImport
from tests.factories import approved_rubric, question_make

pytestmark = pytest.mark.django_db


def topics() -> set[str]:
    return set(Topic.objects.values_list("name", flat=True))


def line(points: list[int], **extra) -> str:
    rubrics = [
        {"criterion": f"Criterion {i}.", "points": p, "tags": ["axis:accuracy"]}
        for i, p in enumerate(points)
    ]
    return json.dumps(
        {
            "prompt_id": "hb-9",
            "prompt": [{"role": "user", "content": "My account was hacked."}],
            "rubrics": rubrics,
            "example_tags": ["theme:compromise"],
            **extra,
        }
    )


def test_the_export_invents_no_axis_for_factual_criteria(expert, reviewer):
    approved_rubric(question_make(), expert, reviewer)
    row = json.loads(export_healthbench(selectors.export_rubrics(approved_only=True)))
    tags = {r["criterion"]: r["tags"] for r in row["rubrics"]}
    assert not any("axis:accuracy" in t for t in tags.values())
    factual = [t for t in tags.values() if "kind:factual" in t]
    presentation = [t for t in tags.values() if "kind:presentation" in t]
    assert factual and all(not any(x.startswith("axis:") for x in t) for t in factual)
    assert presentation and all("axis:communication_quality" in t for t in presentation)


def test_the_conversion_note_states_the_axes_and_where_healthbench_clips():
    for text in (interchange.HEALTHBENCH_CONVERSION, interchange.__doc__):
        flat = " ".join(text.split())
        assert "clip" in flat and "aggregate" in flat
        assert "communication_quality is presentation" in flat or (
            "communication quality is presentation" in flat
        )
        assert "factual" in flat


@pytest.mark.parametrize("url", ["rubrics:export", "rubrics:import"])
def test_the_pages_show_the_conversion_note(client, researcher, url):
    client.force_login(researcher)
    page = client.get(reverse(url)).text
    assert "clips only the aggregate score" in page
    assert "axis:communication_quality is presentation" in page


def test_a_file_in_the_set_is_rescaled_by_bands_only_with_a_warning():
    plan = plan_healthbench(line([5, 3, -5]), "hb.jsonl", topics(), points_mapping="bands")
    assert plan.ok
    assert [c.points for c in plan.rubrics[0].criteria] == [3, 2, 3]
    assert plan.rescaled == [
        "hb.jsonl line 1 ('hb-9'): 5 → 3",
        "hb.jsonl line 1 ('hb-9'): 3 → 2",
        "hb.jsonl line 1 ('hb-9'): -5 → -3",
    ]
    assert "3 criterion point value(s) change" in plan.rescale_warning


def test_points_outside_the_set_that_are_mapped_are_listed_as_rescaled():
    plan = plan_healthbench(line([7, 5]), "hb.jsonl", topics(), points_mapping="nearest")
    assert [c.points for c in plan.rubrics[0].criteria] == [5, 5]
    assert plan.rescaled == ["hb.jsonl line 1 ('hb-9'): 7 → 5"]


@pytest.mark.parametrize("mapping", ["refuse", "nearest", "bands"])
def test_an_assay_export_round_trips_without_rescaling_whatever_the_mapping(
    expert, reviewer, researcher, mapping
):
    question = question_make()
    approved_rubric(question, expert, reviewer)
    exported = export_healthbench(selectors.export_rubrics(approved_only=True))
    upload = services.rubric_import_upload(
        content=exported.encode(),
        filename="export.jsonl",
        format="healthbench",
        options={"points_mapping": mapping},
        user=researcher,
    )
    plan = services.rubric_import_plan(upload=upload)
    assert plan.ok and plan.rescaled == [] and plan.rescale_warning == ""
    result = services.rubric_import_commit(upload=upload, user=researcher)
    assert result["unchanged"] == [question.external_id]


def test_a_rescaling_import_waits_for_confirmation(researcher):
    upload = services.rubric_import_upload(
        content=line([5, 3]).encode(),
        filename="hb.jsonl",
        format="healthbench",
        options={"points_mapping": "bands"},
        user=researcher,
    )
    with pytest.raises(RubricError, match="2 criterion point value"):
        services.rubric_import_commit(upload=upload, user=researcher)
    assert not Rubric.objects.exists()
    services.rubric_import_commit(upload=upload, user=researcher, rescale_confirmed=True)
    assert [c.points for c in Rubric.objects.get().criteria.filter(origin="expert")] == [3, 2]


def test_the_preview_asks_to_confirm_the_rescaling(client, researcher):
    client.force_login(researcher)
    upload = services.rubric_import_upload(
        content=line([5, 3]).encode(),
        filename="hb.jsonl",
        format="healthbench",
        options={"points_mapping": "bands"},
        user=researcher,
    )
    url = reverse("rubrics:import_preview", args=[upload.pk])
    page = client.get(url).text
    assert "2 criterion point value(s) change" in page and 'name="confirm_rescale"' in page
    refused = client.post(url, follow=True).text
    assert "Confirm the rescaling" in refused and not Rubric.objects.exists()
    client.post(url, {"confirm_rescale": "1"})
    assert Rubric.objects.count() == 1


def test_the_command_warns_and_needs_rescale_to_commit(researcher, tmp_path, capsys):
    path = tmp_path / "hb.jsonl"
    path.write_text(line([5, 3]))
    args = [
        str(path),
        "--format",
        "healthbench",
        "--as",
        researcher.username,
        "--points-mapping",
        "bands",
    ]
    call_command("import_rubrics", *args)
    out = capsys.readouterr().out
    assert "Warning: 2 criterion point value(s) change" in out and "5 → 3" in out
    with pytest.raises(CommandError, match="--rescale to confirm"):
        call_command("import_rubrics", *args, "--commit")
    assert not RubricImport.objects.exists() and not Rubric.objects.exists()
    call_command("import_rubrics", *args, "--commit", "--rescale")
    assert Rubric.objects.count() == 1
