from collections import Counter
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.roles import Role
from apps.demo.rubrics import demo_rubrics_load
from apps.llm.models import ModelConfig
from apps.questions.models import Question
from apps.rubrics.models import AuthoringSettings, QuestionAssignment, Rubric, RubricImport
from apps.runs.selectors import reference_model_ids
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
HEALTHBENCH = Path(__file__).parent / "data" / "healthbench-format-sample.jsonl"


@pytest.fixture
def demo_users():
    roles = {
        "expert": [Role.EXPERT],
        "expert2": [Role.EXPERT],
        "reviewer": [Role.EXPERT, Role.REVIEWER],
        "researcher": [Role.RESEARCHER],
    }
    for username, role_list in roles.items():
        user = user_with_role(role_list[0], username=username)
        if len(role_list) > 1:
            from apps.accounts.services import user_set_roles

            user_set_roles(user=user, roles=role_list)
    for name in ("Terse", "Thorough", "Friendly"):
        ModelConfig.objects.create(
            display_name=f"Offline {name} (demo)",
            family="Offline demo",
            litellm_model=f"openai/offline-{name.lower()}",
            api_base="http://127.0.0.1:8089/v1",
        )


def test_the_demo_leaves_rubrics_in_every_state_and_can_run_again(demo_users):
    summary = demo_rubrics_load()
    assert summary == "18 questions imported, 16 rubrics made"
    states = Counter(Rubric.objects.values_list("state", flat=True))
    assert states == {"approved": 10, "draft": 2, "in_review": 2, "changes_requested": 2}
    authors = Counter(QuestionAssignment.objects.values_list("author__username", flat=True))
    assert authors == {"expert": 9, "expert2": 8}
    assert set(QuestionAssignment.objects.values_list("reviewer__username", flat=True)) == {
        "reviewer"
    }
    assert not QuestionAssignment.objects.filter(question__external_id="scams-02").exists()
    assert AuthoringSettings.objects.get().draft_model.display_name == "Offline Thorough (demo)"
    assert len(reference_model_ids()) == 3
    changes = Rubric.objects.get(question__external_id="privacy-tools-02")
    assert changes.comments.filter(criterion__isnull=False).exists()

    assert demo_rubrics_load() == "0 questions imported, 0 rubrics made"
    assert Question.objects.count() == 18 and Rubric.objects.count() == 16


def test_import_rubrics_command_shows_the_conversion_then_commits(researcher, capsys):
    with pytest.raises(CommandError, match="choose a points mapping"):
        call_command(
            "import_rubrics",
            str(HEALTHBENCH),
            "--format",
            "healthbench",
            "--as",
            researcher.username,
        )
    assert Question.objects.count() == 0
    args = [
        str(HEALTHBENCH),
        "--format",
        "healthbench",
        "--as",
        researcher.username,
        "--points-mapping",
        "bands",
        "--conversation",
        "join",
    ]
    call_command("import_rubrics", *args)
    out = capsys.readouterr().out
    assert "-6 → should avoid, earns 3 when avoided" in out and "run again with --commit" in out
    assert "Warning: 11 criterion point value(s) change" in out
    assert Question.objects.count() == 0 and not RubricImport.objects.exists()
    with pytest.raises(CommandError, match="run again with --rescale to confirm"):
        call_command("import_rubrics", *args, "--commit")
    assert Question.objects.count() == 0 and not RubricImport.objects.exists()
    call_command("import_rubrics", *args, "--commit", "--rescale")
    assert "Imported 3 rubric(s) as drafts." in capsys.readouterr().out
    assert Rubric.objects.filter(state="draft").count() == 3
