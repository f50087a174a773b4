"""The shared presentation criteria: versioned centrally, carried by every rubric."""

from django.db import transaction
from django.db.models import Max

from apps.accounts.roles import Role, user_has_role

from ..errors import RubricError
from ..models import (
    EDITABLE_STATES,
    POINTS,
    Criterion,
    EventAction,
    Origin,
    Polarity,
    Rubric,
    SharedCriterion,
    SharedCriterionSet,
)
from .editing import normalise_text
from .revisions import bump, criterion_like


def shared_criteria_current() -> SharedCriterionSet:
    current = SharedCriterionSet.objects.order_by("-version").first()
    if current is None:
        raise RubricError("There are no shared presentation criteria yet; run migrations.")
    return current


def shared_criteria_copy(*, rubric: Rubric, criterion_set: SharedCriterionSet) -> None:
    """Give `rubric` its own rows for the set's criteria (judgments refer to them)."""
    Criterion.objects.bulk_create(
        criterion_like(s, rubric=rubric, order=s.order, origin=Origin.SHARED, shared_source=s)
        for s in criterion_set.criteria.all()
    )


def shared_criteria_publish(*, criteria: list[dict], notes: str, user) -> SharedCriterionSet:
    """Publish version n+1 of the shared criteria; open drafts take it up at once.

    Rubrics in review keep their version (the reviewer is reading it) and so do approved
    ones (immutable); they take up the new version when they are next edited.
    """
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers change the shared presentation criteria.")
    cleaned = _clean(criteria)
    with transaction.atomic():
        # Lock the current set so two researchers cannot both publish the same number.
        list(SharedCriterionSet.objects.select_for_update().values("pk"))
        latest = SharedCriterionSet.objects.aggregate(v=Max("version"))["v"] or 0
        new = SharedCriterionSet.objects.create(version=latest + 1, notes=notes, created_by=user)
        SharedCriterion.objects.bulk_create(
            SharedCriterion(criterion_set=new, order=i, **c) for i, c in enumerate(cleaned, 1)
        )
        texts = {c["text"].lower() for c in cleaned}
        for rubric in Rubric.objects.select_for_update().filter(state__in=EDITABLE_STATES):
            clash = [
                c.text
                for c in rubric.criteria.exclude(origin=Origin.SHARED)
                if c.text.lower() in texts
            ]
            if clash:
                raise RubricError(
                    f"The draft of {rubric.question} already has its own criterion "
                    f"“{clash[0]}”; reword one of them first."
                )
            rubric.criteria.filter(origin=Origin.SHARED).delete()
            shared_criteria_copy(rubric=rubric, criterion_set=new)
            rubric.shared_set = new
            rubric.save(update_fields=["shared_set"])
            bump(
                rubric,
                user=user,
                action=EventAction.SHARED_UPDATED,
                summary=f"Shared presentation criteria v{new.version}",
                detail={"version": new.version},
            )
    return new


def _clean(criteria: list[dict]) -> list[dict]:
    if not criteria:
        raise RubricError("Give at least one shared criterion.")
    problems, seen, cleaned = [], set(), []
    for number, item in enumerate(criteria, start=1):
        text = normalise_text(item.get("text", ""))
        if not text:
            problems.append(f"Criterion {number}: the text is empty.")
        elif text.lower() in seen:
            problems.append(f"Criterion {number}: the same text as an earlier one.")
        if item.get("polarity") not in Polarity.values:
            problems.append(f"Criterion {number}: choose should include or should avoid.")
        if item.get("points") not in POINTS:
            problems.append(f"Criterion {number}: points must be 5, 3, 2 or 1.")
        seen.add(text.lower())
        cleaned.append(
            {"text": text, "polarity": item.get("polarity"), "points": item.get("points")}
        )
    if problems:
        raise RubricError(" ".join(problems))
    return cleaned
