"""The rubric-authoring demo: the 18 fixture questions, their authors and reviewer, and
rubrics in every state, so a newcomer sees the editor, the review and the history working.

Every rubric is made through the same services the browser uses (so its history reads as
if the demo users had written it), with the criteria of `apps/questions/fixtures/questions.json`.
Suggestions and sample answers come from the offline demo models. Safe to run again: a
question that already has a rubric or an assignment is left as it is.
"""

import datetime as dt
import json
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from apps.accounts.models import User
from apps.llm.models import ModelConfig
from apps.questions.models import Question, Topic
from apps.questions.services import questions_import
from apps.rubrics import services
from apps.rubrics.models import AuthoringSettings, QuestionAssignment, Rubric
from apps.runs.services import reference_models_set

QUESTIONS_FILE = Path(settings.BASE_DIR) / "apps" / "questions" / "fixtures" / "questions.json"
REFERENCE_MODELS = ["Offline Terse (demo)", "Offline Thorough (demo)", "Offline Friendly (demo)"]
DRAFT_MODEL = "Offline Thorough (demo)"
# Which state each fixture question's rubric is left in (absent: not started).
STATES = {
    "accounts-01": "approved",
    "moderation-01": "approved",
    "security-tools-01": "approved",
    "privacy-tools-01": "approved",
    "compromise-01": "approved",
    "platform-actions-01": "approved",
    "scams-01": "approved",
    "harassment-01": "approved",
    "data-concerns-01": "approved",
    "moderation-02": "draft",
    "security-tools-02": "in_review",
    "privacy-tools-02": "changes_requested",
    "compromise-02": "draft",
    "platform-actions-02": "in_review",
    "harassment-02": "stale",
    "data-concerns-02": "changes_requested",
}
# Left for the demo expert to claim (its topic is open for claiming).
CLAIMABLE = "scams-02"
STALE_DAYS = 200


def demo_rubrics_load() -> str:
    """Load what is missing; returns a one-line summary."""
    users = {
        u.username: u
        for u in User.objects.filter(username__in=["expert", "expert2", "reviewer", "researcher"])
    }
    if len(users) < 4:
        return "skipped (the demo users are missing)"
    report = questions_import(content=QUESTIONS_FILE.read_bytes(), filename="questions.json")
    _configure_models()
    doc = json.loads(QUESTIONS_FILE.read_text())
    started = 0
    for index, item in enumerate(doc["questions"]):
        question = Question.objects.get(external_id=item["id"])
        author = users["expert"] if (index + index // 2) % 2 == 0 else users["expert2"]
        _assign(question, author, users)
        if item["id"] in STATES and not question.rubrics.exists():
            _rubric(question, item["criteria"], STATES[item["id"]], author, users["reviewer"])
            started += 1
    return f"{len(report.created)} questions imported, {started} rubrics made"


def _configure_models() -> None:
    models = ModelConfig.objects.filter(display_name__in=REFERENCE_MODELS)
    if models.exists():
        reference_models_set(models=models)
    draft = ModelConfig.objects.filter(display_name=DRAFT_MODEL).first()
    settings_row, _ = AuthoringSettings.objects.get_or_create(pk=1)
    if settings_row.draft_model is None and draft is not None:
        settings_row.draft_model = draft
        settings_row.save(update_fields=["draft_model"])


def _assign(question: Question, author: User, users: dict) -> None:
    if QuestionAssignment.objects.filter(question=question).exists():
        return
    if question.external_id == CLAIMABLE:
        services.topic_claiming_set(
            topic=Topic.objects.get(pk=question.topic_id),
            open=True,
            default_reviewer=users["reviewer"],
            user=users["researcher"],
        )
        return
    services.assignment_set(
        question=question, author=author, reviewer=users["reviewer"], user=users["researcher"]
    )


def _rubric(question: Question, criteria: list[dict], state: str, author, reviewer) -> Rubric:
    rubric = services.rubric_start(question=question, user=author)
    keep = criteria[:-2] if state == "draft" else criteria
    for item in keep:
        services.criterion_add(
            rubric=rubric,
            user=author,
            revision=rubric.revision,
            text=item["text"],
            polarity=item["polarity"],
            kind=item["kind"],
            points=item["points"],
        )
        rubric.refresh_from_db()
    if state == "draft":
        return rubric
    services.rubric_submit_for_review(rubric=rubric, user=author)
    if state == "in_review":
        return rubric
    if state == "changes_requested":
        first = rubric.criteria.order_by("order").first()
        services.review_comment_add(
            rubric=rubric,
            user=reviewer,
            criterion_id=first.pk,
            body="Name where to find this setting on the main platforms; as written it is "
            "hard to check in an answer.",
        )
        return services.rubric_request_changes(rubric=rubric, user=reviewer)
    services.rubric_approve(rubric=rubric, user=reviewer)
    if state == "stale":
        # Demo only: an approval long ago, so the freshness page has something to list.
        then = timezone.now() - dt.timedelta(days=STALE_DAYS)
        Rubric.objects.filter(pk=rubric.pk).update(approved_at=then, verified_at=then)
    return rubric
