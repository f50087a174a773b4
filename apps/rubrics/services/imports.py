"""Rubric files in: plan (shown to the researcher), then commit (all or nothing)."""

import hashlib

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.roles import Role, user_has_role
from apps.console.uploads import UploadRefused, text_decode
from apps.questions.errors import QuestionError
from apps.questions.models import Question, Topic
from apps.questions.services import questions_ensure

from ..errors import ImportRefused, RubricError
from ..interchange import (
    CONVERSATIONS,
    MAX_IMPORT_BYTES,
    POINT_MAPPINGS,
    ImportPlan,
    plan_assay,
    plan_healthbench,
)
from ..models import (
    OPEN_STATES,
    Criterion,
    EventAction,
    Origin,
    RubricImport,
    RubricState,
    SharedCriterionSet,
)
from .revisions import criterion_like, record
from .shared import shared_criteria_current
from .workflow import rubric_version_open


def rubric_import_check(
    *, content: bytes | str, filename: str, format: str, options: dict
) -> ImportPlan:
    """What importing the file would do and every reason it would be refused; stores
    nothing (the command's dry run, and the upload's check)."""
    return _plan(_read(content, filename, format), filename, format, _options(options))


def _read(content: bytes | str, filename: str, format: str) -> str:
    if format not in RubricImport.Format.values:
        raise RubricError("Choose the file's format.")
    try:
        return text_decode(content, max_bytes=MAX_IMPORT_BYTES)
    except UploadRefused as exc:
        raise ImportRefused(filename, [str(exc)]) from exc


def rubric_import_upload(
    *, content: bytes, filename: str, format: str, options: dict, user
) -> RubricImport:
    """Keep a file to preview and commit; a file with any problem is refused and nothing is
    stored (ImportRefused lists the problems)."""
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers import rubrics.")
    text = _read(content, filename, format)
    plan = _plan(text, filename, format, _options(options))
    if plan.problems:
        raise ImportRefused(filename, plan.problems)
    return RubricImport.objects.create(
        uploaded_by=user,
        filename=filename[:255],
        sha256=hashlib.sha256(content).hexdigest(),
        content=text,
        format=format,
        options=_options(options),
    )


def _options(options: dict) -> dict:
    return {
        "points_mapping": options.get("points_mapping")
        if options.get("points_mapping") in POINT_MAPPINGS
        else "refuse",
        "conversation": options.get("conversation")
        if options.get("conversation") in CONVERSATIONS
        else "refuse",
        "default_topic": options.get("default_topic") or "",
    }


def rubric_import_plan(*, upload: RubricImport) -> ImportPlan:
    """What committing `upload` would do, and every reason it would be refused."""
    return _plan(upload.content, upload.filename, upload.format, _options(upload.options))


def _plan(text: str, filename: str, format: str, options: dict) -> ImportPlan:
    topics = set(Topic.objects.values_list("name", flat=True))
    if format == RubricImport.Format.HEALTHBENCH:
        plan = plan_healthbench(
            text,
            filename,
            topics,
            points_mapping=options["points_mapping"],
            conversation=options["conversation"],
            default_topic=options["default_topic"],
        )
    else:
        plan = plan_assay(text, filename, topics, options["points_mapping"])
    _check_against_bank(plan)
    _compare_shared(plan)
    return plan


def _compare_shared(plan: ImportPlan) -> None:
    """Say so when the file's shared presentation criteria are not this bank's current set:
    a rubric carries the set of the bank it is in (its shared criteria are never imported),
    so its score here may differ from its score where the file was written."""
    if plan.presentation_criteria is None:
        return
    current = SharedCriterionSet.objects.order_by("-version").first()
    ours = (
        [] if current is None else list(current.criteria.values_list("text", "polarity", "points"))
    )
    theirs = [(c.text, c.polarity, c.points) for c in plan.presentation_criteria]
    if sorted(theirs) != sorted(ours):
        version = f"version {current.version}" if current else "none yet"
        plan.notes.append(
            f"The file's {len(theirs)} shared presentation criteria differ from this bank's "
            f"({version}, {len(ours)} criteria). Imported rubrics carry this bank's set, as "
            "every rubric here does; publish the file's under Shared criteria to use it."
        )


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


def rubric_import_commit(*, upload: RubricImport, user, rescale_confirmed: bool = False) -> dict:
    """Import every rubric of `upload` as a new draft version, or nothing. A plan that
    changes any criterion's points imports only with `rescale_confirmed`."""
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers import rubrics.")
    upload.refresh_from_db(fields=["committed_at"])
    if upload.committed_at is not None:
        raise RubricError(f"{upload.filename} was already imported.")
    plan = rubric_import_plan(upload=upload)
    if not plan.ok:
        raise RubricError(f"{upload.filename} was not imported: " + "; ".join(plan.problems[:10]))
    if plan.rescaled and not rescale_confirmed:
        raise RubricError(f"{upload.filename} was not imported: {plan.rescale_warning}")
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
            rubric,
            user=user,
            action=EventAction.IMPORTED,
            summary=f"From {upload.filename} ({upload.get_format_display()})",
            detail={"import": upload.pk, "options": upload.options},
        )
        made.append(question.external_id)
    return {"questions_created": created, "rubrics_created": made, "unchanged": unchanged}
