"""Rubric files in: plan (shown to the researcher), then commit (all or nothing)."""

import hashlib

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.roles import Role, user_has_role
from apps.questions.errors import QuestionError
from apps.questions.models import Question, Topic
from apps.questions.services import questions_ensure

from ..errors import RubricError
from ..interchange import CONVERSATIONS, POINT_MAPPINGS, ImportPlan, plan_assay, plan_healthbench
from ..models import OPEN_STATES, Criterion, EventAction, Origin, RubricImport, RubricState
from .revisions import criterion_like, record
from .shared import shared_criteria_current
from .workflow import rubric_version_open

MAX_BYTES = 10 * 1024 * 1024


def rubric_import_upload(
    *, content: bytes, filename: str, format: str, options: dict, user
) -> RubricImport:
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers import rubrics.")
    if len(content) > MAX_BYTES:
        raise RubricError(f"{filename} is larger than 10 MB.")
    if format not in RubricImport.Format.values:
        raise RubricError("Choose the file's format.")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RubricError(f"{filename}: not UTF-8 text (byte {exc.start}).") from exc
    return RubricImport.objects.create(
        uploaded_by=user, filename=filename[:255], sha256=hashlib.sha256(content).hexdigest(),
        content=text, format=format, options=_options(options),
    )  # fmt: skip


def _options(options: dict) -> dict:
    return {
        "points_mapping": options.get("points_mapping") if options.get("points_mapping")
        in POINT_MAPPINGS else "refuse",
        "conversation": options.get("conversation")
        if options.get("conversation") in CONVERSATIONS else "refuse",
        "default_topic": options.get("default_topic") or "",
    }  # fmt: skip


def rubric_import_plan(*, upload: RubricImport) -> ImportPlan:
    """What committing `upload` would do, and every reason it would be refused."""
    topics = set(Topic.objects.values_list("name", flat=True))
    options = _options(upload.options)
    if upload.format == RubricImport.Format.HEALTHBENCH:
        plan = plan_healthbench(
            upload.content, upload.filename, topics, points_mapping=options["points_mapping"],
            conversation=options["conversation"], default_topic=options["default_topic"],
        )  # fmt: skip
    else:
        plan = plan_assay(upload.content, upload.filename, topics, options["points_mapping"])
    _check_against_bank(plan)
    return plan


def _check_against_bank(plan: ImportPlan) -> None:
    ids = [r.question.external_id for r in plan.rubrics]
    questions = Question.objects.select_related("topic").in_bulk(ids, field_name="external_id")
    open_versions = dict(
        Question.objects.filter(external_id__in=ids, rubrics__state__in=OPEN_STATES).values_list(
            "external_id", "rubrics__version"
        )
    )
    for rubric in plan.rubrics:
        ident = rubric.question.external_id
        stored = questions.get(ident)
        if stored is not None and stored.text != rubric.question.text:
            plan.problems.append(
                f"{ident}: the question text differs from the question already in the bank "
                "with this id"
            )
        if ident in open_versions:
            plan.problems.append(
                f"{ident}: version {open_versions[ident]} is being worked on; finish or approve "
                "it before importing another version"
            )


def rubric_import_commit(*, upload: RubricImport, user) -> dict:
    """Import every rubric of `upload` as a new draft version, or nothing."""
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers import rubrics.")
    upload.refresh_from_db(fields=["committed_at"])
    if upload.committed_at is not None:
        raise RubricError(f"{upload.filename} was already imported.")
    plan = rubric_import_plan(upload=upload)
    if not plan.ok:
        raise RubricError(f"{upload.filename} was not imported: " + "; ".join(plan.problems[:10]))
    shared_criteria_current()
    try:
        with transaction.atomic():
            locked = RubricImport.objects.select_for_update().get(pk=upload.pk)
            if locked.committed_at is not None:
                raise RubricError(f"{upload.filename} was already imported.")
            result = _commit(plan, upload, user)
            locked.committed_at, locked.result = timezone.now(), result
            locked.save(update_fields=["committed_at", "result"])
    except (QuestionError, IntegrityError) as exc:
        raise RubricError(f"{upload.filename} was not imported: {exc}") from exc
    return result


def _commit(plan: ImportPlan, upload: RubricImport, user) -> dict:
    questions, created = questions_ensure(
        records=[r.question for r in plan.rubrics], filename=upload.filename, user=user
    )
    made, unchanged = [], []
    for planned in plan.rubrics:
        question = questions[planned.question.external_id]
        latest = question.rubrics.filter(state=RubricState.APPROVED).order_by("-version").first()
        wanted = [(c.text, c.polarity, c.kind, c.points) for c in planned.criteria]
        if latest is not None and wanted == [
            (c.text, c.polarity, c.kind, c.points)
            for c in latest.criteria.exclude(origin=Origin.SHARED)
        ]:
            unchanged.append(question.external_id)
            continue
        rubric = rubric_version_open(question=question, user=user, action=EventAction.IMPORTED)
        rubric.criteria.exclude(origin=Origin.SHARED).delete()
        Criterion.objects.bulk_create(
            criterion_like(c, rubric=rubric, order=i, origin=Origin.EXPERT, created_by=user)
            for i, c in enumerate(planned.criteria, start=1)
        )
        record(
            rubric, user=user, action=EventAction.IMPORTED,
            summary=f"From {upload.filename} ({upload.get_format_display()})",
            detail={"import": upload.pk, "options": upload.options},
        )  # fmt: skip
        made.append(question.external_id)
    return {"questions_created": created, "rubrics_created": made, "unchanged": unchanged}
