"""Undoing one's own calibration grades: the service (a stack of one's completed grades,
refused once the other grade of the answer is in, recorded as a withdrawal), the undo
endpoint for every person, and that nobody reopens another grader's grade."""

import threading

import pytest
from django.db import connection
from django.urls import reverse

from apps.accounts.roles import Role
from apps.grading.errors import GradingError
from apps.grading.models import ExpertGradeWithdrawal, ExpertJudgment
from apps.grading.selectors.calibration import set_blind_for
from apps.grading.services.calibration import expert_grade_save, expert_grade_undo
from tests.factories import user_with_role
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    set_make,
    world_fixture,
    world_make,
)

UNDO = "grading:calibration_undo"


@pytest.fixture
def site(world):
    world.set = set_make(world)
    world.samples = list(world.set.samples.order_by("question_id"))
    return world


def labels(sample, turn="first"):
    return list(
        ExpertJudgment.objects.filter(sample=sample)
        .order_by("criterion_id")
        .values_list(f"{turn}_met", flat=True)
    )


def test_undo_reopens_the_last_grade_and_again_the_one_before(db, site):
    first, second = site.samples[:2]
    grade(first, site.author, lambda c: True, note="fine")
    grade(second, site.author, lambda c: c.order % 2 == 0)
    kept = labels(second)
    reopened = expert_grade_undo(user=site.author)
    assert reopened.pk == second.pk and reopened.first_done_at is None
    assert labels(second) == kept  # the labels stay, to be changed and saved again
    withdrawn = ExpertGradeWithdrawal.objects.get()
    assert (withdrawn.sample_id, withdrawn.grader, withdrawn.turn) == (
        second.pk,
        site.author,
        "first",
    )
    assert sorted(withdrawn.labels.values()) == sorted(kept)
    assert expert_grade_undo(user=site.author).pk == first.pk
    with pytest.raises(GradingError, match="no completed grade to undo"):
        expert_grade_undo(user=site.author)
    first.refresh_from_db()
    assert first.first_done_at is None
    # Saved again, the grade is complete again.
    assert grade(first, site.author, lambda c: False).first_done_at is not None


def test_undo_is_refused_once_the_other_grade_is_in(db, site):
    sample = site.samples[0]
    grade(sample, site.author, lambda c: True)
    grade(sample, site.second, lambda c: c.order != 1)
    for person in (site.second, site.author):
        with pytest.raises(GradingError, match="can no longer be undone"):
            expert_grade_undo(user=person)
    sample.refresh_from_db()
    assert sample.first_done_at and sample.second_done_at
    assert not ExpertGradeWithdrawal.objects.exists()


def test_undo_of_a_grade_that_is_no_longer_the_last_is_refused(db, site):
    first, second = site.samples[:2]
    grade(first, site.second, lambda c: True)
    grade(second, site.second, lambda c: True)
    with pytest.raises(GradingError, match="no longer your last one"):
        expert_grade_undo(user=site.second, sample_id=first.pk)
    first.refresh_from_db()
    assert first.second_done_at is not None


def test_the_second_grader_undoing_is_blind_to_the_rater_again(db, site):
    for sample in site.samples:
        grade(sample, site.second, lambda c: True)
    assert not set_blind_for(calibration_set=site.set, viewer=site.second)
    expert_grade_undo(user=site.second)
    assert set_blind_for(calibration_set=site.set, viewer=site.second)


def test_nobody_reopens_another_graders_grade(db, client, site):
    sample = site.samples[0]
    grade(sample, site.author, lambda c: True)
    for person in (site.other_expert, site.second, site.researcher):
        with pytest.raises(GradingError, match="no completed grade to undo"):
            expert_grade_undo(user=person)
        client.force_login(person)
        response = client.post(reverse(UNDO), {"sample": sample.pk}, follow=True)
        assert "no completed grade to undo" in response.content.decode()
    sample.refresh_from_db()
    assert sample.first_done_at is not None


@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_each_role_may_ask_and_only_a_grader_has_something_to_undo(db, client, site, role):
    grade(site.samples[0], site.author, lambda c: True)
    client.force_login(user_with_role(role))
    response = client.post(reverse(UNDO))
    if role is None:
        assert response.status_code == 403
    else:
        assert response.status_code == 302
        assert response["Location"] == reverse("grading:calibration_queue")
    site.samples[0].refresh_from_db()
    assert site.samples[0].first_done_at is not None
    client.logout()
    anonymous = client.post(reverse(UNDO))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert client.get(reverse(UNDO)).status_code == 302  # to sign in, then 405 for a GET


def test_the_pages_offer_the_undo_key_and_it_lands_on_the_reopened_answer(db, client, site):
    first, second = site.samples[:2]
    client.force_login(site.author)
    criteria = list(first.judgments.values_list("criterion_id", flat=True))
    response = client.post(
        reverse("grading:calibration_grade", args=[first.pk]),
        {f"met-{pk}": "1" for pk in criteria},
    )
    assert response["Location"] == reverse("grading:calibration_grade", args=[second.pk])
    page = client.get(response["Location"]).content.decode()
    assert 'aria-keyshortcuts="u"' in page and f'name="sample" value="{first.pk}"' in page
    assert f"Your grade of {first.question.external_id} is in" in page
    queue = client.get(reverse("grading:calibration_queue")).content.decode()
    assert 'data-testid="undo"' in queue
    undone = client.post(reverse(UNDO), {"sample": first.pk})
    assert undone["Location"] == reverse("grading:calibration_grade", args=[first.pk])
    page = client.get(undone["Location"]).content.decode()
    assert "is open again: change what you need and save it." in page
    assert page.count(" checked") == len(criteria)  # the labels as they were
    assert "data-expert-grading" in page
    again = client.post(reverse(UNDO), {"sample": first.pk}, follow=True).content.decode()
    assert "no completed grade to undo" in again
    bad = client.post(reverse(UNDO), {"sample": "x"}, follow=True).content.decode()
    assert "That is not an answer of yours" in bad


def test_once_both_grades_are_in_the_page_says_the_grade_stands(db, client, site):
    sample = site.samples[0]
    grade(sample, site.author, lambda c: True)
    grade(sample, site.second, lambda c: True)
    client.force_login(site.author)
    page = client.get(reverse("grading:calibration_queue")).content.decode()
    assert "stands: the other grade of it is in too" in page
    assert 'aria-keyshortcuts="u"' not in page


@pytest.mark.django_db(transaction=True)
def test_an_undo_and_the_other_graders_save_at_once_leave_a_consistent_answer(
    offline_provider_url,
):
    """The undo and the other grader's completing save take the answer's row lock in turn:
    either the undo comes first (the answer waits for the reopened grade, nothing is final)
    or the save does (both grades are in, the agreements are final, the undo is refused)."""
    world = world_make(offline_provider_url, questions=1, samples=1)
    sample = set_make(world).samples.get()
    ids = list(sample.judgments.values_list("criterion_id", flat=True))
    grade(sample, world.author, lambda c: True)
    start, outcomes = threading.Barrier(2), {}

    def run(name, call):
        try:
            start.wait()
            call()
            outcomes[name] = "done"
        except GradingError as exc:
            outcomes[name] = str(exc)
        finally:
            connection.close()

    def save():
        expert_grade_save(sample=sample, user=world.second, labels=dict.fromkeys(ids, True))

    threads = [
        threading.Thread(target=run, args=("undo", lambda: expert_grade_undo(user=world.author))),
        threading.Thread(target=run, args=("save", save)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sample.refresh_from_db()
    assert outcomes["save"] == "done" and sample.second_done_at is not None
    finals = set(sample.judgments.values_list("final_met", flat=True))
    if outcomes["undo"] == "done":
        assert sample.first_done_at is None and finals == {None}
    else:
        assert "can no longer be undone" in outcomes["undo"]
        assert sample.first_done_at is not None and finals == {True}
