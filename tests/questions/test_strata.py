"""Strata labels (label, blind verification, resolution) and the quota counts."""

import pytest

from apps.accounts.roles import Role
from apps.questions.errors import QuestionError
from apps.questions.models import LabelStage, LabelStatus, LengthBucket, QuotaSettings
from apps.questions.selectors import strata as selectors
from apps.questions.services import strata as services
from tests.factories import question_make, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(db):
    return user_with_role(Role.RESEARCHER, first_name="Sana", last_name="Second")


def labelled(question, researcher, prior=True, sensemaking=False, guidance=True):
    return services.question_label(
        question=question,
        researcher=researcher,
        mentions_prior_attempt=prior,
        needs_sensemaking=sensemaking,
        needs_guidance=guidance,
    )


def verified(question, researcher, prior=True, sensemaking=False, guidance=True):
    return services.question_label_verify(
        question=question,
        researcher=researcher,
        mentions_prior_attempt=prior,
        needs_sensemaking=sensemaking,
        needs_guidance=guidance,
    )


def labels_of(question) -> tuple[bool, bool, bool]:
    question.refresh_from_db()
    return question.mentions_prior_attempt, question.needs_sensemaking, question.needs_guidance


def test_labelling_sets_the_questions_labels_and_waits_for_verification(researcher):
    question = labelled(question_make(), researcher, prior=True, sensemaking=True, guidance=False)
    assert labels_of(question) == (True, True, False)
    assert question.label_status == LabelStatus.LABELLED
    assert question.labelled_by == researcher and question.verified_by is None
    assert list(question.labels.values_list("stage", "needs_sensemaking", "needs_guidance")) == [
        (LabelStage.LABEL, True, False)
    ]


@pytest.mark.parametrize(
    "sensemaking,guidance", [(True, True), (True, False), (False, True), (False, False)]
)
def test_equal_labels_from_a_second_researcher_verify_the_question(
    researcher, second, sensemaking, guidance
):
    """Both needs, one, or neither: each is its own yes or no."""
    question = labelled(question_make(), researcher, sensemaking=sensemaking, guidance=guidance)
    verified(question, second, sensemaking=sensemaking, guidance=guidance)
    assert labels_of(question) == (True, sensemaking, guidance)
    assert question.label_status == LabelStatus.VERIFIED
    assert question.verified_by == second and question.labelled_by == researcher


@pytest.mark.parametrize(
    "differs", ["prior", "sensemaking", "guidance"], ids=lambda d: f"{d}-differs"
)
def test_a_difference_in_any_one_label_disputes_the_question(researcher, second, differs):
    first = {"prior": True, "sensemaking": True, "guidance": False}
    question = labelled(question_make(), researcher, **first)
    verified(question, second, **{**first, differs: not first[differs]})
    question.refresh_from_db()
    assert question.label_status == LabelStatus.DISPUTED and question.verified_by is None
    assert labels_of(question) == (True, True, False), "the first labels stand until resolved"
    assert [q.pk for q in selectors.disputed_questions()] == [question.pk]


def test_different_labels_dispute_the_question_and_a_resolution_settles_it(researcher, second):
    question = labelled(question_make(), researcher, prior=True, sensemaking=False, guidance=True)
    verified(question, second, prior=True, sensemaking=True, guidance=True)
    question.refresh_from_db()
    assert question.label_status == LabelStatus.DISPUTED
    assert [q.pk for q in selectors.disputed_questions()] == [question.pk]
    given = selectors.disputed_questions().get().given
    assert [
        (g.stage, g.researcher, g.mentions_prior_attempt, g.needs_sensemaking, g.needs_guidance)
        for g in given
    ] == [("label", researcher, True, False, True), ("verify", second, True, True, True)]
    resolver = user_with_role(Role.RESEARCHER)
    services.question_label_resolve(
        question=question,
        researcher=resolver,
        mentions_prior_attempt=False,
        needs_sensemaking=True,
        needs_guidance=False,
    )
    assert labels_of(question) == (False, True, False)
    assert question.label_status == LabelStatus.RESOLVED
    assert question.verified_by == resolver
    assert question.labels.get(stage=LabelStage.RESOLVE).needs_sensemaking is True
    assert not selectors.disputed_questions().exists()


def test_the_labeller_cannot_verify_their_own_labels(researcher):
    question = labelled(question_make(), researcher)
    with pytest.raises(QuestionError, match="another researcher verifies it"):
        verified(question, researcher)
    question.refresh_from_db()
    assert question.label_status == LabelStatus.LABELLED
    assert question.labels.count() == 1


def test_out_of_order_steps_are_refused_with_a_reason(researcher, second):
    question = question_make()
    with pytest.raises(QuestionError, match="not waiting for verification: it is not labelled"):
        verified(question, second)
    with pytest.raises(QuestionError, match="not waiting for a resolution"):
        services.question_label_resolve(
            question=question,
            researcher=second,
            mentions_prior_attempt=True,
            needs_sensemaking=False,
            needs_guidance=True,
        )
    labelled(question, researcher)
    with pytest.raises(QuestionError, match="already labelled"):
        labelled(question, second)
    with pytest.raises(QuestionError, match="whether the question asks for sensemaking: yes or no"):
        verified(question, second, sensemaking="")
    with pytest.raises(QuestionError, match="whether the question asks for guidance: yes or no"):
        verified(question, second, guidance=None)
    assert question.labels.count() == 1


def test_imported_questions_already_verified_are_not_in_the_queues(researcher):
    imported = question_make(needs_guidance=True, label_status=LabelStatus.VERIFIED)
    fresh = question_make()
    assert list(selectors.questions_to_label()) == [fresh]
    assert imported not in selectors.questions_to_verify(researcher=researcher)
    with pytest.raises(QuestionError, match="already labelled"):
        labelled(imported, researcher)


def test_the_verify_queue_holds_only_others_labels(researcher, second):
    mine = labelled(question_make(), researcher)
    theirs = labelled(question_make(), second)
    assert list(selectors.questions_to_verify(researcher=researcher)) == [theirs]
    assert list(selectors.questions_to_verify(researcher=second)) == [mine]


def test_the_label_queue_filters_by_topic(researcher):
    scams = question_make(topic="scams")
    question_make(topic="accounts")
    queue = selectors.label_queue(researcher=researcher, topic=scams.topic)
    assert queue.to_label == [scams] and queue.to_label_count == 1


# --- quotas ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chars,bucket",
    [
        (332, "short"),
        (333, "medium"),
        (665, "medium"),
        (666, "long"),
        (999, "long"),
        (1000, "over"),
    ],
)
def test_quotas_count_a_question_in_its_length_bucket_at_the_edges(chars, bucket):
    question_make(topic="scams", text="x" * chars, length_bucket=LengthBucket(bucket))
    row = next(r for r in selectors.quota_table() if r.topic.name == "scams")
    counts = {s.key: s.count for s in row.lengths}
    expected = {"short": 0, "medium": 0, "long": 0}
    if bucket != "over":
        expected[bucket] = 1
    assert counts == expected
    assert (row.total, row.over) == ((0, 1) if bucket == "over" else (1, 0))


def test_quotas_count_a_hand_built_bank_against_the_settings(researcher, second):
    from apps.questions.models import length_bucket_for

    for chars in (332, 333, 665, 666, 999, 1000):
        question_make(topic="scams", text="y" * chars, length_bucket=length_bucket_for("y" * chars))
    settled = question_make(
        topic="scams",
        needs_guidance=True,
        mentions_prior_attempt=True,
        label_status=LabelStatus.VERIFIED,
    )
    pending = labelled(
        question_make(topic="scams"), researcher, prior=False, sensemaking=True, guidance=False
    )
    assert settled and pending
    QuotaSettings.objects.update_or_create(
        pk=1, defaults={"target_per_topic": 10, "minimum_per_stratum": 2}
    )
    row = next(r for r in selectors.quota_table() if r.topic.name == "scams")
    # 332 and the two factory texts are short; 333 and 665 medium; 666 and 999 long.
    assert {s.key: s.count for s in row.lengths} == {"short": 3, "medium": 2, "long": 2}
    assert (row.total, row.target, row.shortfall, row.over) == (7, 10, 3, 1)
    labels = {s.key: (s.count, s.settled, s.pending, s.shortfall) for s in row.labels}
    assert labels == {
        "prior_yes": (1, 1, 0, 1),
        "prior_no": (1, 0, 1, 1),
        "sensemaking": (1, 0, 1, 1),
        "guidance": (1, 1, 0, 1),
    }
    assert row.unlabelled == 5
    services.quota_settings_update(target_per_topic=7, minimum_per_stratum=1)
    row = next(r for r in selectors.quota_table() if r.topic.name == "scams")
    assert row.shortfall == 0 and row.gaps == []


def test_quotas_count_each_need_per_topic_a_question_with_both_in_both(researcher):
    def made(topic, sensemaking, guidance, status=LabelStatus.VERIFIED):
        return question_make(
            topic=topic, needs_sensemaking=sensemaking, needs_guidance=guidance, label_status=status
        )

    made("scams", True, True)
    labelled(question_make(topic="scams"), researcher, sensemaking=True, guidance=False)
    made("scams", False, True)
    made("scams", False, False)  # labelled as asking for neither
    question_make(topic="scams")  # not labelled: counted in no label stratum
    made("accounts", True, True, LabelStatus.RESOLVED)
    QuotaSettings.objects.update_or_create(
        pk=1, defaults={"target_per_topic": 10, "minimum_per_stratum": 3}
    )
    table = {row.topic.name: row for row in selectors.quota_table()}

    def needs(row):
        return {
            s.key: (s.count, s.settled, s.pending, s.shortfall)
            for s in row.labels
            if s.key in ("sensemaking", "guidance")
        }

    assert needs(table["scams"]) == {"sensemaking": (2, 1, 1, 1), "guidance": (2, 2, 0, 1)}
    assert needs(table["accounts"]) == {"sensemaking": (1, 1, 0, 2), "guidance": (1, 1, 0, 2)}
    assert needs(table["harassment"]) == {"sensemaking": (0, 0, 0, 3), "guidance": (0, 0, 0, 3)}
    assert [s.label for s in table["scams"].gaps if s.key in ("sensemaking", "guidance")] == [
        "Asks for sensemaking",
        "Asks for guidance",
    ]


def test_quota_settings_refuse_a_minimum_above_the_target():
    with pytest.raises(QuestionError, match="cannot be met"):
        services.quota_settings_update(target_per_topic=5, minimum_per_stratum=6)
    assert selectors.quota_settings().minimum_per_stratum == 10
