import json
from pathlib import Path

import pytest

from apps.questions.models import LabelStatus, Question, Topic
from apps.rubrics import selectors, services
from apps.rubrics.errors import ImportRefused, RubricError
from apps.rubrics.interchange import export_assay, export_healthbench, plan_healthbench
from apps.rubrics.models import (
    EventAction,
    Origin,
    RubricImport,
    RubricState,
    SharedCriterionSet,
)
from tests.factories import approved_rubric, question_assigned, question_make

pytestmark = pytest.mark.django_db
HEALTHBENCH = Path(__file__).parent / "data" / "healthbench-format-sample.jsonl"
QUESTIONS = (
    Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"
)


def topics() -> set[str]:
    return set(Topic.objects.values_list("name", flat=True))


def upload(researcher, path: Path, fmt: str, **options) -> RubricImport:
    return services.rubric_import_upload(
        content=path.read_bytes(), filename=path.name, format=fmt, options=options, user=researcher
    )


def test_healthbench_points_outside_the_set_are_refused_unless_a_mapping_is_chosen():
    plan = plan_healthbench(HEALTHBENCH.read_bytes(), "hb.jsonl", topics())
    assert not plan.ok
    assert (
        "hb.jsonl line 1 ('hb-sample-001'), rubrics[0], field \"points\" (7): 7 is outside "
        "5, 3, 2, 1; choose a points mapping to convert it"
    ) in plan.problems
    assert any(
        "line 3 ('hb-sample-003'), field \"prompt\": a conversation of 3 messages" in p
        for p in plan.problems
    )


def test_healthbench_negatives_become_should_avoid_worth_their_magnitude():
    plan = plan_healthbench(
        HEALTHBENCH.read_bytes(), "hb.jsonl", topics(), points_mapping="bands", conversation="join"
    )
    assert plan.ok, plan.problems
    first = plan.rubrics[0]
    assert first.question.topic == "compromise"
    assert [(c.polarity, c.points, c.kind) for c in first.criteria] == [
        ("positive", 5, "factual"),  # 7 -> 5
        ("positive", 3, "factual"),  # 6 -> 3
        ("positive", 2, "factual"),  # 3 -> 2
        ("negative", 3, "factual"),  # -6 -> should avoid, 3
        ("negative", 1, "presentation"),  # -2, communication_quality -> presentation
    ]
    assert first.source_max == 16 and first.assay_max == 14
    assert "-6 → should avoid, earns 3 when avoided" in first.criteria[3].note
    assert any("subtracting" in note for note in plan.notes)
    assert plan.rubrics[2].question.text.startswith("User: I posted my address")
    assert plan.rubrics[1].question.topic == "security tools"


def test_nearest_mapping_rounds_ties_up():
    plan = plan_healthbench(
        HEALTHBENCH.read_bytes(),
        "hb.jsonl",
        topics(),
        points_mapping="nearest",
        conversation="join",
    )
    password_manager = plan.rubrics[1]
    assert [c.points for c in password_manager.criteria] == [5, 5, 5]  # 6, 4 (tie up), -5


def test_the_import_is_shown_then_committed_as_drafts(researcher):
    pending = upload(
        researcher, HEALTHBENCH, "healthbench", points_mapping="bands", conversation="join"
    )
    assert Question.objects.count() == 0  # nothing is written before the commit
    with pytest.raises(RubricError, match="11 criterion point value"):
        services.rubric_import_commit(upload=pending, user=researcher)  # rescaling unconfirmed
    assert Question.objects.count() == 0
    result = services.rubric_import_commit(upload=pending, user=researcher, rescale_confirmed=True)
    assert result["rubrics_created"] == ["hb-sample-001", "hb-sample-002", "hb-sample-003"]
    question = Question.objects.get(external_id="hb-sample-001")
    rubric = question.rubrics.get()
    assert rubric.state == RubricState.DRAFT
    assert rubric.events.get().action == EventAction.IMPORTED
    assert rubric.criteria.filter(origin=Origin.SHARED).count() == 5
    with pytest.raises(RubricError, match="already imported"):
        services.rubric_import_commit(upload=pending, user=researcher)


def test_a_refused_plan_commits_nothing_and_keeps_no_upload(researcher):
    with pytest.raises(RubricError, match=r"was not imported .*: .* choose a points mapping"):
        upload(researcher, HEALTHBENCH, "healthbench")
    assert Question.objects.count() == 0 and not RubricImport.objects.exists()


def test_importing_over_an_open_draft_is_refused(researcher, expert):
    text = "Is it safe to let my password manager fill in passwords automatically?"
    question = question_assigned(
        expert, external_id="hb-sample-002", text=text, topic="security tools"
    )
    services.rubric_start(question=question, user=expert)
    with pytest.raises(ImportRefused) as refused:
        upload(researcher, HEALTHBENCH, "healthbench", points_mapping="bands", conversation="join")
    assert "hb-sample-002: version 1 is being worked on" in refused.value.problems[0]
    assert not RubricImport.objects.exists()


def test_the_fixture_imports_as_18_rubrics(researcher):
    pending = upload(researcher, QUESTIONS, "assay")
    plan = services.rubric_import_plan(upload=pending)
    assert plan.ok and len(plan.rubrics) == 18
    services.rubric_import_commit(upload=pending, user=researcher)
    rubric = Question.objects.get(external_id="accounts-02").rubrics.get()
    own = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order")
    assert own.count() == 6 and own[0].points == 5


def test_a_file_sharing_this_banks_presentation_criteria_imports_without_a_note(researcher):
    plan = services.rubric_import_plan(upload=upload(researcher, QUESTIONS, "assay"))
    assert len(plan.presentation_criteria) == 5
    assert plan.presentation_criteria[0].text.startswith("The most important")
    assert not any("shared presentation criteria" in note for note in plan.notes)


def test_a_file_with_other_presentation_criteria_says_so_and_keeps_this_banks(researcher, tmp_path):
    doc = json.loads(QUESTIONS.read_text())
    doc["presentation_criteria"] = [
        {
            "text": "Puts the key step first.",
            "polarity": "positive",
            "kind": "presentation",
            "points": 3,
        },
    ]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    pending = upload(researcher, other, "assay")
    plan = services.rubric_import_plan(upload=pending)
    current = SharedCriterionSet.objects.order_by("-version").first().version
    assert (
        f"The file's 1 shared presentation criteria differ from this bank's (version {current}, "
        "5 criteria). Imported rubrics carry this bank's set"
    ) in " ".join(plan.notes)
    services.rubric_import_commit(upload=pending, user=researcher)
    rubric = Question.objects.get(external_id="accounts-02").rubrics.get()
    texts = list(rubric.criteria.filter(origin=Origin.SHARED).values_list("text", flat=True))
    assert len(texts) == 5 and "Puts the key step first." not in texts


def test_assay_criteria_are_checked_item_by_item(researcher, tmp_path):
    doc = json.loads(QUESTIONS.read_text())
    doc["questions"][1]["criteria"][2]["points"] = 4
    doc["questions"][1]["criteria"][3]["polarity"] = "neutral"
    bad = tmp_path / "rubrics.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ImportRefused) as refused:
        upload(researcher, bad, "assay")
    assert (
        "questions[1] ('accounts-02'), criteria[2], field \"points\": 4 is outside 5, 3, 2, 1; "
        "choose a points mapping to convert it"
    ) in refused.value.problems
    assert any('criteria[3], field "polarity"' in p for p in refused.value.problems)


def test_exports_round_trip_through_both_formats(expert, reviewer, researcher, tmp_path):
    question = question_make()
    approved = approved_rubric(question, expert, reviewer)
    rubrics = selectors.export_rubrics(approved_only=True)
    shared = services.shared_criteria_current().criteria.all()

    doc = export_assay(rubrics, shared, sorted(topics()))
    assert doc["format"] == "assay-questions/1"
    assert len(doc["presentation_criteria"]) == 5
    (item,) = doc["questions"]
    assert item["id"] == question.external_id and item["rubric_version"] == 1
    assert (item["needs_sensemaking"], item["needs_guidance"]) == (None, None)  # not labelled
    assert "need_type" not in item
    own = [
        (c.text, c.polarity, c.kind, c.points)
        for c in approved.criteria.exclude(origin=Origin.SHARED).order_by("order")
    ]
    assert [(c["text"], c["polarity"], c["kind"], c["points"]) for c in item["criteria"]] == own

    lines = export_healthbench(rubrics).splitlines()
    row = json.loads(lines[0])
    assert [r["points"] for r in row["rubrics"]][:3] == [5, 3, -5]
    assert sum("assay:shared" in r["tags"] for r in row["rubrics"]) == 5

    exported = tmp_path / "export.jsonl"
    exported.write_text("\n".join(lines))
    plan = services.rubric_import_plan(upload=upload(researcher, exported, "healthbench"))
    assert plan.ok, plan.problems
    (back,) = plan.rubrics
    assert [(c.text, c.polarity, c.kind, c.points) for c in back.criteria] == own
    result = services.rubric_import_commit(
        upload=RubricImport.objects.latest("pk"), user=researcher
    )
    assert result["unchanged"] == [question.external_id]


def test_an_assay_export_carries_the_two_need_labels_into_a_bank(
    expert, reviewer, researcher, tmp_path
):
    question = question_make(
        needs_sensemaking=True, needs_guidance=True, label_status=LabelStatus.VERIFIED
    )
    approved_rubric(question, expert, reviewer)
    shared = services.shared_criteria_current().criteria.all()
    doc = export_assay(selectors.export_rubrics(approved_only=True), shared, sorted(topics()))
    (item,) = doc["questions"]
    assert (item["needs_sensemaking"], item["needs_guidance"]) == (True, True)
    item["id"] = "copied-01"  # the same question, as another bank would receive it
    exported = tmp_path / "rubrics.json"
    exported.write_text(json.dumps(doc))
    plan = services.rubric_import_plan(upload=upload(researcher, exported, "assay"))
    assert plan.ok, plan.problems
    services.rubric_import_commit(upload=RubricImport.objects.latest("pk"), user=researcher)
    copied = Question.objects.get(external_id="copied-01")
    assert (copied.needs_sensemaking, copied.needs_guidance) == (True, True)
    assert copied.label_status == LabelStatus.VERIFIED
