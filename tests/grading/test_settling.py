"""Settling an answer's disagreements on one screen: the service (several final labels at
once, the rubric author's label for a selection, refused whole when a criterion is not a
disagreement), the page for every person, with and without HTMX, and the walk from answer
to answer whose address follows the answer shown."""

import pytest
from django.urls import reverse

from apps.grading.errors import GradingError
from apps.grading.models import ExpertJudgment
from apps.grading.services.calibration import disagreements_settle
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    set_make,
    world_fixture,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def url(sample):
    return reverse("grading:calibration_adjudicate", args=[sample.pk])


def disagreeing(world, sample, odd: bool = True):
    """The author marks every criterion met, the second grader not met on every other one:
    the criteria (in order) they disagree on."""
    ordered = list(
        sample.judgments.order_by("criterion__order", "criterion_id").values_list(
            "criterion_id", flat=True
        )
    )
    differ = set(ordered[0 if odd else 1 :: 2])
    grade(sample, world.author, lambda c: True, note="author: met")
    grade(sample, world.second, lambda c: c.pk not in differ, note="second: no")
    return list(
        sample.judgments.filter(final_met__isnull=True)
        .order_by("criterion__order", "criterion_id")
        .values_list("criterion_id", flat=True)
    )


@pytest.fixture
def site(world):
    world.set = set_make(world)
    world.samples = list(world.set.samples.order_by("question_id"))
    world.sample = world.samples[0]
    world.disagreements = disagreeing(world, world.sample)
    return world


def finals(sample):
    return dict(sample.judgments.values_list("criterion_id", "final_met"))


def test_several_final_labels_are_saved_at_once_with_the_authors_for_a_selection(site):
    a, b, c, d = site.disagreements
    sample = disagreements_settle(
        sample=site.sample,
        user=site.second,
        finals={a: False, c: False, d: False},
        notes={a: "  agreed: not met "},
        from_author=[b, d],  # the author's label wins over a final sent for the same one
    )
    saved = finals(sample)
    assert [saved[x] for x in (a, b, c, d)] == [False, True, False, True]
    row = ExpertJudgment.objects.get(sample=sample, criterion_id=a)
    assert (row.resolution_note, row.resolved_by, row.first_met, row.second_met) == (
        "agreed: not met",
        site.second,
        True,
        False,
    )
    assert sample.resolved_at is not None


def test_a_part_is_saved_and_the_answer_stays_unsettled(site):
    a, *_rest = site.disagreements
    sample = disagreements_settle(sample=site.sample, user=site.author, finals={a: True})
    assert finals(sample)[a] is True and sample.resolved_at is None


def test_settling_is_refused_whole_for_an_agreed_criterion_a_stranger_or_an_open_answer(site):
    a, *_rest = site.disagreements
    agreed = site.sample.judgments.exclude(final_met=None).first()
    before = finals(site.sample)
    with pytest.raises(GradingError, match="same label from both graders"):
        disagreements_settle(
            sample=site.sample, user=site.author, finals={a: True, agreed.criterion_id: False}
        )
    for stranger in (site.researcher, site.other_expert, site.reviewer):
        with pytest.raises(GradingError, match="Only the answer's two graders"):
            disagreements_settle(sample=site.sample, user=stranger, finals={a: True})
    with pytest.raises(GradingError, match="not in the rubric version"):
        disagreements_settle(sample=site.sample, user=site.author, finals={10**9: True})
    open_one = site.samples[1]
    grade(open_one, site.author, lambda c: True)
    criterion = open_one.judgments.first().criterion_id
    with pytest.raises(GradingError, match="Both graders must finish"):
        disagreements_settle(sample=open_one, user=site.author, finals={criterion: True})
    assert finals(site.sample) == before


PEOPLE = {
    # person: the status of a POST that saves the final labels (302: saved, then redirected)
    "other_expert": 403,
    "author": 302,
    "second": 302,
    "reviewer": 403,
    "researcher": 403,
}


@pytest.mark.parametrize("person", list(PEOPLE))
def test_only_the_answers_two_graders_save_final_labels(client, site, person):
    a, *_rest = site.disagreements
    client.force_login(getattr(site, person))
    response = client.post(url(site.sample), {f"final-{a}": "0"})
    assert response.status_code == PEOPLE[person]
    assert finals(site.sample)[a] is (False if PEOPLE[person] == 302 else None)


def test_an_anonymous_visitor_is_sent_to_sign_in(client, site):
    for response in (client.get(url(site.sample)), client.post(url(site.sample), {})):
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_page_shows_every_disagreement_with_both_labels_notes_and_the_keys(client, site):
    client.force_login(site.author)
    page = client.get(url(site.sample)).content.decode()
    assert page.count('data-testid="disagreement"') == 4
    assert page.count("author: met") >= 4 and page.count("second: no") >= 4
    assert "the label of the rubric's author, Alma Author, who grades first" in page
    for key in ("<kbd>A</kbd>", "<kbd>X</kbd>", "<kbd>1</kbd>", "<kbd>0</kbd>", "<kbd>N</kbd>"):
        assert key in page
    assert page.count('data-author="1"') == 4
    assert 'src="/static/js/settling.js"' in page


def test_the_authors_label_for_the_selection_and_the_rest_are_saved_in_one_request(client, site):
    a, b, c, d = site.disagreements
    client.force_login(site.second)
    data = {"author": "1", f"pick-{a}": "1", f"pick-{c}": "1", f"final-{b}": "0"}
    response = client.post(url(site.sample), data, **HX)
    text = response.content.decode()
    assert response.status_code == 200 and "<html" not in text
    assert text.startswith("<title>Settle ") and 'id="settle"' in text
    assert "Saved 3 final labels, 2 of them the rubric author&#x27;s." in text
    saved = finals(site.sample)
    assert [saved[x] for x in (a, b, c, d)] == [True, False, True, None]
    # Without JavaScript: the same request, then the page again.
    plain = client.post(url(site.sample), {f"final-{d}": "0"})
    assert plain.status_code == 302 and plain["Location"] == url(site.sample)
    page = client.get(plain["Location"]).content.decode()
    assert "Saved 1 final label." in page and "0 still to settle" in page


def test_a_refused_save_keeps_what_was_chosen(client, site):
    a, b, *_rest = site.disagreements
    agreed = site.sample.judgments.exclude(final_met=None).first().criterion_id
    client.force_login(site.author)
    data = {f"final-{a}": "0", f"pick-{b}": "1", f"note-{a}": "x" * 6000}
    page = client.post(url(site.sample), data)
    assert page.status_code == 400 and "Nothing was saved" in page.content.decode()
    assert 'data-testid="criterion-error"' in page.content.decode()
    assert page.content.decode().count(" checked") >= 2  # the final and the selection
    assert finals(site.sample)[a] is None
    # A criterion both graders agree on is not on the form: it is not read at all.
    client.post(url(site.sample), {f"final-{agreed}": "0"})
    assert finals(site.sample)[agreed] is True


def test_the_walk_goes_from_answer_to_answer_and_the_address_follows(client, site):
    second_answer = site.samples[1]
    disagreeing(site, second_answer, odd=False)
    client.force_login(site.author)
    first_page = client.get(url(site.sample)).content.decode()
    assert "Answer 1 of 2 of Calibration with both grades in; 2 still to settle." in first_page
    link = url(second_answer)
    assert f'href="{link}" hx-get="{link}"' in first_page and 'hx-push-url="true"' in first_page
    assert 'aria-keyshortcuts="n"' in first_page and 'aria-keyshortcuts="p"' not in first_page
    fragment = client.get(link, **HX).content.decode()
    assert fragment.startswith(f"<title>Settle {second_answer.question.external_id} · Assay")
    assert "Answer 2 of 2" in fragment and 'aria-keyshortcuts="p"' in fragment
    # The address pushed is the answer's own page: a reload lands on the same answer.
    reloaded = client.get(link).content.decode()
    assert "<html" in reloaded
    assert f"Settle the grades of {second_answer.question.external_id}" in reloaded


def test_the_back_button_asks_for_the_whole_page(client, site):
    client.force_login(site.author)
    restore = {**HX, "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
    page = client.get(url(site.sample), **restore).content.decode()
    assert "<html" in page and 'hx-history="false"' in page
