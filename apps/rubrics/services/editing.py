"""Adding, editing, deleting and reordering the criteria of a draft."""

from django.db import IntegrityError, transaction
from django.db.models import Max

from ..errors import RubricError
from ..models import POINTS, Criterion, EventAction, Kind, Origin, Polarity, Rubric
from .revisions import bump, check_revision, locked, require_editable, snapshot

MAX_TEXT = 1000


def normalise_text(text: str) -> str:
    return " ".join((text or "").split())


def criterion_clean(
    *,
    rubric: Rubric,
    text: str,
    polarity: str,
    kind: str,
    points: int,
    exclude_pk: int | None = None,
) -> str:
    """The criterion's text, normalised, or RubricError naming every problem by field."""
    errors = {}
    text = normalise_text(text)
    if not text:
        errors["text"] = "Write what a good answer should include or avoid: the text is empty."
    elif len(text) > MAX_TEXT:
        errors["text"] = f"Keep a criterion under {MAX_TEXT:,} characters ({len(text):,} now)."
    if polarity not in Polarity.values:
        errors["polarity"] = "Choose whether an answer should include or avoid this."
    if kind not in Kind.values:
        errors["kind"] = "Choose factual or presentation."
    if points not in POINTS:
        errors["points"] = f"Points must be 5, 3, 2 or 1, not {points!r}."
    if text and "text" not in errors:
        same = rubric.criteria.filter(text__iexact=text).exclude(pk=exclude_pk).first()
        if same is not None:
            where = "the shared presentation criteria" if same.is_shared else "this rubric"
            errors["text"] = f"A criterion with this text is already in {where}."
    if errors:
        raise RubricError(" ".join(errors.values()), field_errors=errors)
    return text


def criterion_add(
    *,
    rubric: Rubric,
    user,
    revision: int,
    text: str,
    polarity: str,
    kind: str,
    points: int,
    origin: str = Origin.EXPERT,
) -> Criterion:
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        check_revision(rubric, revision)
        text = criterion_clean(
            rubric=rubric, text=text, polarity=polarity, kind=kind, points=points
        )
        last = rubric.criteria.exclude(origin=Origin.SHARED).aggregate(m=Max("order"))["m"] or 0
        try:
            with transaction.atomic():
                criterion = Criterion.objects.create(
                    rubric=rubric,
                    text=text,
                    polarity=polarity,
                    kind=kind,
                    points=points,
                    order=last + 1,
                    origin=origin,
                    created_by=user,
                )
        except IntegrityError as exc:  # the unique text constraint, from a racing add
            raise RubricError(
                "A criterion with this text is already in this rubric.",
                field_errors={"text": "A criterion with this text is already in this rubric."},
            ) from exc
        bump(
            rubric,
            user=user,
            action=EventAction.CRITERION_ADDED,
            criterion=criterion,
            summary=text,
            detail={"after": snapshot(criterion), "origin": origin},
        )
    criterion.rubric = rubric
    return criterion


def _own(rubric: Rubric, criterion_id: int) -> Criterion:
    try:
        criterion = rubric.criteria.get(pk=criterion_id)
    except Criterion.DoesNotExist as exc:
        raise RubricError("This criterion is no longer in the draft.") from exc
    if criterion.is_shared:
        raise RubricError(
            "Shared presentation criteria are read-only here; researchers change them centrally."
        )
    return criterion


def criterion_update(
    *,
    rubric: Rubric,
    criterion_id: int,
    user,
    revision: int,
    text: str,
    polarity: str,
    kind: str,
    points: int,
) -> tuple[Criterion, bool]:
    """Returns (criterion, changed). Saving what is already there changes nothing."""
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        text_now = normalise_text(text)
        criterion = rubric.criteria.filter(pk=criterion_id).first()
        if criterion is not None and (text_now, polarity, kind, points) == (
            criterion.text,
            criterion.polarity,
            criterion.kind,
            criterion.points,
        ):
            return criterion, False
        check_revision(rubric, revision)
        criterion = _own(rubric, criterion_id)
        text = criterion_clean(
            rubric=rubric,
            text=text,
            polarity=polarity,
            kind=kind,
            points=points,
            exclude_pk=criterion.pk,
        )
        before = snapshot(criterion)
        criterion.text, criterion.polarity, criterion.kind, criterion.points = (
            text,
            polarity,
            kind,
            points,
        )
        criterion.save(update_fields=["text", "polarity", "kind", "points"])
        bump(
            rubric,
            user=user,
            action=EventAction.CRITERION_EDITED,
            criterion=criterion,
            summary=text,
            detail={"before": before, "after": snapshot(criterion)},
        )
    criterion.rubric = rubric
    return criterion, True


def criterion_delete(*, rubric: Rubric, criterion_id: int, user, revision: int) -> Rubric:
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        check_revision(rubric, revision)
        criterion = _own(rubric, criterion_id)
        before = snapshot(criterion)
        criterion.delete()
        bump(
            rubric,
            user=user,
            action=EventAction.CRITERION_DELETED,
            summary=before["text"],
            detail={"before": before},
        )
    return rubric


def criterion_move(
    *, rubric: Rubric, criterion_id: int, user, revision: int, direction: str
) -> Rubric:
    if direction not in ("up", "down"):
        raise RubricError("A criterion moves up or down.")
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        check_revision(rubric, revision)
        criterion = _own(rubric, criterion_id)
        own = list(rubric.criteria.exclude(origin=Origin.SHARED).order_by("order", "pk"))
        index = next(i for i, c in enumerate(own) if c.pk == criterion.pk)
        target = index - 1 if direction == "up" else index + 1
        if not 0 <= target < len(own):
            return rubric
        own[index], own[target] = own[target], own[index]
        for position, item in enumerate(own, start=1):
            if item.order != position:
                item.order = position
                item.save(update_fields=["order"])
        bump(
            rubric,
            user=user,
            action=EventAction.CRITERION_MOVED,
            criterion=criterion,
            summary=criterion.text,
            detail={"direction": direction, "position": target + 1},
        )
    return rubric
