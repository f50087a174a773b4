import datetime as dt
from functools import partial

import pytest
from django.utils import timezone

from apps.rubrics import selectors, services
from apps.rubrics.errors import RubricConflict, RubricError, RubricForbidden
from apps.rubrics.models import (
    EventAction,
    Origin,
    Rubric,
    RubricState,
    SharedCriterionSet,
)
from tests.factories import (
    CRITERIA,
    approved_rubric,
    assign,
    draft_with_criteria,
    question_assigned,
    question_make,
)

pytestmark = pytest.mark.django_db


def add(rubric, user, text="Says to change the password.", **fields):
    rubric.refresh_from_db()
    values = {"polarity": "positive", "kind": "factual", "points": 3, **fields}
    return services.criterion_add(
        rubric=rubric, user=user, revision=rubric.revision, text=text, **values
    )


def test_a_new_rubric_carries_the_current_shared_presentation_criteria(expert):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    shared = list(rubric.criteria.filter(origin=Origin.SHARED).order_by("order"))
    assert rubric.version == 1 and rubric.state == RubricState.DRAFT
    assert [c.text for c in shared] == [
        c.text for c in SharedCriterionSet.objects.get(version=2).criteria.all()
    ]
    assert {c.kind for c in shared} == {"presentation"}
    assert rubric.events.get().action == EventAction.CREATED


def test_starting_twice_returns_the_open_draft(expert):
    question = question_assigned(expert)
    first = services.rubric_start(question=question, user=expert)
    assert services.rubric_start(question=question, user=expert) == first


@pytest.mark.parametrize(
    "text,points,field,message",
    [
        ("   ", 3, "text", "the text is empty"),
        ("Mentions backups.", 4, "points", "Points must be 5, 3, 2 or 1"),
        ("Mentions backups.", 0, "points", "Points must be 5, 3, 2 or 1"),
    ],
)
def test_invalid_criteria_are_refused_with_a_message_per_field(
    expert, text, points, field, message
):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    with pytest.raises(RubricError) as refused:
        add(rubric, expert, text=text, points=points)
    assert message in refused.value.field_errors[field]
    assert not rubric.criteria.exclude(origin=Origin.SHARED).exists()


def test_duplicate_text_is_refused_ignoring_case_and_spacing(expert):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    add(rubric, expert, text="Says to change the password.")
    with pytest.raises(RubricError, match="already in this rubric"):
        add(rubric, expert, text="  says to CHANGE   the password. ")
    with pytest.raises(RubricError, match="shared presentation criteria"):
        add(rubric, expert, text="Is unprofessional in tone or manner.")


def test_the_later_of_two_conflicting_saves_is_refused_and_overwrites_nothing(expert):
    rubric = draft_with_criteria(question_make(), expert)
    first = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order").first()
    seen = rubric.revision  # the author's two windows opened this revision

    services.criterion_update(
        rubric=rubric,
        criterion_id=first.pk,
        user=expert,
        revision=seen,
        text="Erin's wording.",
        polarity="positive",
        kind="factual",
        points=5,
    )
    with pytest.raises(RubricConflict) as refused:
        services.criterion_update(
            rubric=rubric,
            criterion_id=first.pk,
            user=expert,
            revision=seen,
            text="Emeka's wording.",
            polarity="positive",
            kind="factual",
            points=2,
        )

    first.refresh_from_db()
    assert (first.text, first.points) == ("Erin's wording.", 5)
    assert [e.summary for e in refused.value.changes] == ["Erin's wording."]
    assert refused.value.changes[0].detail["before"]["text"] != "Erin's wording."
    assert refused.value.current_revision == seen + 1
    assert "changed this draft after you opened it" in str(refused.value)


def test_every_kind_of_change_checks_the_revision(expert):
    rubric = draft_with_criteria(question_make(), expert)
    stale = rubric.revision
    add(rubric, expert, text="Something new.")  # from another window
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    with pytest.raises(RubricConflict):
        services.criterion_add(
            rubric=rubric,
            user=expert,
            revision=stale,
            text="Mine.",
            polarity="positive",
            kind="factual",
            points=1,
        )
    with pytest.raises(RubricConflict):
        services.criterion_delete(
            rubric=rubric, criterion_id=criterion.pk, user=expert, revision=stale
        )
    with pytest.raises(RubricConflict):
        services.criterion_move(
            rubric=rubric, criterion_id=criterion.pk, user=expert, revision=stale, direction="down"
        )
    assert rubric.criteria.filter(pk=criterion.pk).exists()


def test_saving_unchanged_text_is_not_a_change(expert):
    rubric = draft_with_criteria(question_make(), expert)
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    before = rubric.revision
    _c, changed = services.criterion_update(
        rubric=rubric,
        criterion_id=criterion.pk,
        user=expert,
        revision=before - 1,
        text=criterion.text,
        polarity=criterion.polarity,
        kind=criterion.kind,
        points=criterion.points,
    )
    rubric.refresh_from_db()
    assert changed is False and rubric.revision == before


def test_edits_while_typing_are_one_history_event(expert):
    rubric = draft_with_criteria(question_make(), expert)
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    for text in ("Recommends t", "Recommends two", "Recommends two-step sign-in."):
        rubric.refresh_from_db()
        services.criterion_update(
            rubric=rubric,
            criterion_id=criterion.pk,
            user=expert,
            revision=rubric.revision,
            text=text,
            polarity="positive",
            kind="factual",
            points=5,
        )
    edits = rubric.events.filter(action=EventAction.CRITERION_EDITED)
    assert edits.count() == 1
    assert edits.get().detail["after"]["text"] == "Recommends two-step sign-in."
    assert edits.get().detail["before"]["text"] == criterion.text


def test_criteria_move_up_and_down(expert):
    rubric = draft_with_criteria(question_make(), expert)
    first, second, third = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order")
    services.criterion_move(
        rubric=rubric,
        criterion_id=third.pk,
        user=expert,
        revision=rubric.revision,
        direction="up",
    )
    own, _shared = selectors.rubric_criteria(rubric=rubric)
    assert [c.pk for c in own] == [first.pk, third.pk, second.pk]


def test_only_experts_edit(reviewer, researcher, expert):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    for outsider in (reviewer, researcher):
        with pytest.raises(RubricError, match="Only experts"):
            add(rubric, outsider)
    with pytest.raises(RubricError, match="Only experts"):
        services.rubric_start(question=question_make(), user=reviewer)


def test_submitting_needs_a_criterion_of_ones_own(expert):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    with pytest.raises(RubricError, match="at least one criterion"):
        services.rubric_submit_for_review(rubric=rubric, user=expert)


def test_a_submitted_version_cannot_be_edited_until_changes_are_requested(expert, reviewer):
    rubric = draft_with_criteria(question_make(), expert)
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    with pytest.raises(RubricError, match="in review"):
        add(rubric, expert, text="Late addition.")


def test_the_author_cannot_approve_their_own_rubric(make_user):
    from apps.accounts.roles import Role
    from apps.accounts.services import user_set_roles

    both = make_user(Role.EXPERT)
    user_set_roles(user=both, roles=[Role.EXPERT, Role.REVIEWER])
    rubric = draft_with_criteria(question_make(), both)
    services.rubric_submit_for_review(rubric=rubric, user=both)
    with pytest.raises(RubricError, match="another reviewer must review it"):
        services.rubric_approve(rubric=rubric, user=both)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.IN_REVIEW


def test_a_reviewer_who_edited_the_version_cannot_approve_it(make_user, expert):
    from apps.accounts.roles import Role
    from apps.accounts.services import user_set_roles

    helper = make_user(Role.EXPERT)
    user_set_roles(user=helper, roles=[Role.EXPERT, Role.REVIEWER])
    question = question_make()
    assign(question, author=helper)
    rubric = draft_with_criteria(question, helper)
    assign(question, author=expert)  # reassigned: the helper's edits stay in this version
    add(rubric, expert, text="The author's criterion.")
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    with pytest.raises(RubricError, match="another reviewer"):
        services.rubric_approve(rubric=rubric, user=helper)


def test_only_the_assigned_reviewer_decides(expert, reviewer, make_user):
    from apps.accounts.roles import Role

    other = make_user(Role.REVIEWER)
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    rubric = draft_with_criteria(question, expert)
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    with pytest.raises(RubricError, match="is the reviewer of this question"):
        services.rubric_approve(rubric=rubric, user=other)
    with pytest.raises(RubricError, match="Only reviewers"):
        services.rubric_approve(rubric=rubric, user=expert)
    approved = services.rubric_approve(rubric=rubric, user=reviewer)
    assert approved.state == RubricState.APPROVED
    assert approved.approved_by == reviewer and approved.verified_at is not None


def test_review_round_trip_comment_request_changes_fix_approve(expert, reviewer):
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    rubric = draft_with_criteria(question, expert)
    target = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order").first()
    services.rubric_submit_for_review(rubric=rubric, user=expert)

    with pytest.raises(RubricError, match="Say what should change"):
        services.rubric_request_changes(rubric=rubric, user=reviewer)
    services.review_comment_add(
        rubric=rubric, user=reviewer, body="Name the setting.", criterion_id=target.pk
    )
    services.rubric_request_changes(rubric=rubric, user=reviewer)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.CHANGES_REQUESTED
    assert target.comments.get().body == "Name the setting."

    services.criterion_update(
        rubric=rubric,
        criterion_id=target.pk,
        user=expert,
        revision=rubric.revision,
        text="Recommends turning on two-factor authentication in Settings > Security.",
        polarity="positive",
        kind="factual",
        points=5,
    )
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    services.rubric_approve(rubric=rubric, user=reviewer)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.APPROVED
    assert rubric.comments.filter(resolved_at=None).count() == 0
    actions = list(rubric.events.values_list("action", flat=True))
    assert actions[-4:] == ["changes_requested", "criterion_edited", "submitted", "approved"]


def test_an_approved_version_is_immutable_and_editing_starts_the_next(expert, reviewer):
    rubric = approved_rubric(question_make(), expert, reviewer)
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    with pytest.raises(RubricError, match="is approved and cannot be changed"):
        services.criterion_update(
            rubric=rubric,
            criterion_id=criterion.pk,
            user=expert,
            revision=rubric.revision,
            text="Changed in place.",
            polarity="positive",
            kind="factual",
            points=5,
        )
    with pytest.raises(RubricError, match="is approved"):
        services.criterion_delete(
            rubric=rubric, criterion_id=criterion.pk, user=expert, revision=rubric.revision
        )
    nxt = services.rubric_start(question=rubric.question, user=expert)
    assert (nxt.version, nxt.state, nxt.based_on) == (2, RubricState.DRAFT, rubric)
    copied = nxt.criteria.exclude(origin=Origin.SHARED).order_by("order")
    assert [c.derived_from_id for c in copied] == [
        c.pk for c in rubric.criteria.exclude(origin=Origin.SHARED).order_by("order")
    ]
    criterion.refresh_from_db()
    assert criterion.text != "Changed in place."


def test_history_shows_the_differences_between_versions(expert, reviewer):
    rubric = approved_rubric(question_make(), expert, reviewer)
    nxt = services.rubric_start(question=rubric.question, user=expert)
    first, _second, third = nxt.criteria.exclude(origin=Origin.SHARED).order_by("order")
    services.criterion_update(
        rubric=nxt,
        criterion_id=first.pk,
        user=expert,
        revision=nxt.revision,
        text="Recommends turning on app-based two-factor authentication.",
        polarity="positive",
        kind="factual",
        points=3,
    )
    nxt.refresh_from_db()
    services.criterion_delete(rubric=nxt, criterion_id=third.pk, user=expert, revision=nxt.revision)
    add(nxt, expert, text="Mentions the provider's recovery form.")

    history = selectors.question_history(question=rubric.question)
    diff = history[0]["diff"]
    assert [c.text for c in diff["added"]] == ["Mentions the provider's recovery form."]
    assert [c.text for c in diff["removed"]] == [third.text]
    (change,) = diff["changed"]
    assert set(change["fields"]) == {"text", "points"}
    assert "<ins>app-based</ins>" in change["text_diff"]
    assert history[1]["diff"] is None


def test_word_diff_escapes_criterion_text():
    html = selectors.word_diff(before="Says <b>hi</b>", after="Says <script>x</script>")
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_publishing_shared_criteria_updates_drafts_but_not_reviews_or_approvals(
    expert, expert2, reviewer, researcher
):
    draft = draft_with_criteria(question_make(), expert)
    in_review = draft_with_criteria(question_make(), expert2)
    services.rubric_submit_for_review(rubric=in_review, user=expert2)
    approved = approved_rubric(question_make(), expert, reviewer)

    new = services.shared_criteria_publish(
        criteria=[{"text": "Answers in plain language.", "polarity": "positive", "points": 2}],
        notes="One criterion for the test.",
        user=researcher,
    )

    assert new.version == 3
    draft.refresh_from_db()
    assert draft.shared_set == new
    assert list(draft.criteria.filter(origin=Origin.SHARED).values_list("text", flat=True)) == [
        "Answers in plain language."
    ]
    for kept in (in_review, approved):
        kept.refresh_from_db()
        assert kept.shared_set.version == 2
        assert kept.criteria.filter(origin=Origin.SHARED).count() == 5
    assert draft.events.filter(action=EventAction.SHARED_UPDATED).exists()


def test_shared_criteria_are_researchers_to_change_and_checked(expert, researcher):
    with pytest.raises(RubricError, match="Only researchers"):
        services.shared_criteria_publish(criteria=[], notes="", user=expert)
    with pytest.raises(RubricError, match="Criterion 1: points must be 5, 3, 2 or 1"):
        services.shared_criteria_publish(
            criteria=[{"text": "x", "polarity": "positive", "points": 4}], notes="", user=researcher
        )
    assert SharedCriterionSet.objects.count() == 2


def test_shared_criteria_are_read_only_in_a_rubric(expert):
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    shared = rubric.criteria.filter(origin=Origin.SHARED).first()
    with pytest.raises(RubricError, match="read-only"):
        services.criterion_delete(
            rubric=rubric, criterion_id=shared.pk, user=expert, revision=rubric.revision
        )


def test_freshness_lists_old_approvals_and_sending_back_opens_the_next_version(
    expert, reviewer, researcher
):
    old = approved_rubric(question_make(), expert, reviewer)
    recent = approved_rubric(question_make(), expert, reviewer)
    long_ago = timezone.now() - dt.timedelta(days=200)
    Rubric.objects.filter(pk=old.pk).update(verified_at=long_ago, approved_at=long_ago)

    assert list(selectors.stale_rubrics(older_than_days=180)) == [old]
    assert set(selectors.stale_rubrics(older_than_days=0)) == {old, recent}

    with pytest.raises(RubricError, match="Only researchers"):
        services.rubric_send_back(rubric=old, user=expert, reason="Settings moved.")
    reopened = services.rubric_send_back(rubric=old, user=researcher, reason="Settings moved.")
    assert (reopened.version, reopened.state) == (2, RubricState.DRAFT)
    assert reopened.reverification_reason == "Settings moved."
    assert reopened.events.get().action == EventAction.SENT_BACK
    assert list(selectors.stale_rubrics(older_than_days=180)) == []
    with pytest.raises(RubricError, match="already has version 2"):
        services.rubric_send_back(rubric=old, user=researcher, reason="Again.")


def test_assignments_need_an_expert_author_and_a_different_reviewer(expert, reviewer, researcher):
    question = question_make()
    with pytest.raises(RubricError, match="is not an expert"):
        services.assignment_set(question=question, author=reviewer, reviewer=None, user=researcher)
    with pytest.raises(RubricError, match="is not a reviewer"):
        services.assignment_set(question=question, author=expert, reviewer=expert, user=researcher)
    with pytest.raises(RubricError, match="Only researchers"):
        services.assignment_set(question=question, author=expert, reviewer=reviewer, user=expert)
    done = services.assignment_set(
        question=question, author=expert, reviewer=reviewer, user=researcher
    )
    assert (done.author, done.reviewer, done.assigned_by) == (expert, reviewer, researcher)


def test_experts_claim_questions_only_in_open_topics(expert, expert2, reviewer, researcher):
    question = question_make(topic="scams")
    with pytest.raises(RubricError, match="assigned by researchers"):
        services.question_claim(question=question, user=expert)
    services.topic_claiming_set(
        topic=question.topic, open=True, default_reviewer=reviewer, user=researcher
    )
    claimed = services.question_claim(question=question, user=expert)
    assert (claimed.author, claimed.reviewer, claimed.claimed) == (expert, reviewer, True)
    with pytest.raises(RubricError, match="already writes this rubric"):
        services.question_claim(question=question, user=expert2)


def test_a_reviewer_takes_an_unassigned_review(expert, reviewer):
    rubric = draft_with_criteria(question_make(), expert)
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    assignment = services.review_claim(rubric=rubric, user=reviewer)
    assert assignment.reviewer == reviewer
    with pytest.raises(RubricError, match="Only reviewers"):
        services.review_claim(rubric=rubric, user=expert)


def test_similar_questions_come_from_the_same_topic_with_approved_criteria(expert, reviewer):
    target = question_make(text="Someone stole my Instagram account and changed the email.")
    close = question_make(text="Someone stole my Instagram account and changed the phone number.")
    far = question_make(text="Is a password manager safe to use on a shared family laptop?")
    question_make(topic="scams", text="Someone stole my Instagram account and changed the email!")
    approved_rubric(close, expert, reviewer)

    similar = selectors.similar_questions(question=target)
    assert [item["question"] for item in similar] == [close, far]
    assert similar[0]["similarity"] > similar[1]["similarity"]
    assert similar[0]["criteria"][0].text.startswith("Recommends turning on")
    assert similar[1]["rubric"] is None


def every_change(rubric, criterion, user) -> list:
    """Each write an author makes to a draft, as `user`, against its current revision."""
    rubric.refresh_from_db()
    mine = {"rubric": rubric, "user": user}
    on = {**mine, "criterion_id": criterion.pk, "revision": rubric.revision}
    return [
        partial(add, rubric, user, text="An outsider's criterion."),
        partial(
            services.criterion_update,
            **on,
            text="Rewritten.",
            polarity="positive",
            kind="factual",
            points=1,
        ),
        partial(services.criterion_move, **on, direction="down"),
        partial(services.criterion_delete, **on),
        partial(services.rubric_submit_for_review, **mine),
    ]


def test_only_the_assigned_author_changes_or_submits_a_draft(expert, expert2, reviewer, researcher):
    rubric = draft_with_criteria(question_assigned(expert, reviewer=reviewer), expert)
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    refusals = {
        expert2: "Erin Expert is assigned to write this rubric",
        reviewer: "Only experts",
        researcher: "Only experts",
    }
    for outsider, message in refusals.items():
        for change in every_change(rubric, criterion, outsider):
            with pytest.raises(RubricForbidden, match=message):
                change()
    rubric.refresh_from_db()
    criterion.refresh_from_db()
    assert rubric.state == RubricState.DRAFT and rubric.criteria.count() == 3 + 5
    assert criterion.text == CRITERIA[0][0] and criterion.order == 1

    add(rubric, expert, text="The author's own addition.")
    services.rubric_submit_for_review(rubric=rubric, user=expert)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.IN_REVIEW and rubric.submitted_by == expert


def test_an_expert_starts_only_the_rubrics_they_are_assigned(expert, expert2):
    with pytest.raises(RubricForbidden, match="No one is assigned to write this rubric"):
        services.rubric_start(question=question_make(), user=expert)
    theirs = question_assigned(expert2)
    with pytest.raises(RubricForbidden, match="Emeka Expert is assigned"):
        services.rubric_start(question=theirs, user=expert)
    assert not Rubric.objects.exists()
    assert services.rubric_start(question=theirs, user=expert2).created_by == expert2


def test_after_a_researcher_reassigns_the_question_only_the_new_author_edits(
    expert, expert2, reviewer, researcher
):
    question = question_assigned(expert, reviewer=reviewer)
    rubric = draft_with_criteria(question, expert)
    services.assignment_set(question=question, author=expert2, reviewer=reviewer, user=researcher)
    with pytest.raises(RubricForbidden, match="Emeka Expert is assigned"):
        add(rubric, expert, text="Too late.")
    add(rubric, expert2, text="Taken over.")
    services.rubric_submit_for_review(rubric=rubric, user=expert2)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.IN_REVIEW
    assert not rubric.criteria.filter(text="Too late.").exists()
