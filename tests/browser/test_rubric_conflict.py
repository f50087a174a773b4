"""The author edits one draft in two browsers at once (a laptop and a phone, say; only the
assigned author edits): the later save is refused and shows the other window's change; nothing
is overwritten and nothing typed is lost. `emeka` is Erin's second browser."""

from playwright.sync_api import expect

from apps.rubrics.models import Origin, RubricEvent
from tests.browser.sessions import signed_in
from tests.factories import draft_with_criteria

ERIN_TEXT = "Recommends turning on two-factor authentication with an authenticator app."
EMEKA_TEXT = "Recommends turning on two-factor authentication, ideally with a passkey."


def saving(page):
    """Wait for the page's next save of a criterion to come back."""
    return page.expect_response(lambda r: r.request.method == "POST" and "/criteria/" in r.url)


def settled(page):
    """Wait until htmx has bound what it last swapped in: it settles new content a moment
    after the swap, and a click or change made before that goes unheard (by a person too)."""
    expect(page.locator(".htmx-added, .htmx-settling")).to_have_count(0)


def test_the_later_of_two_conflicting_edits_is_refused_and_nothing_is_lost(
    new_context,
    live_server,
    people,
    question,
    screenshot,
):
    rubric = draft_with_criteria(question, people["erin"])
    first = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order").first()
    url = f"/rubrics/{rubric.pk}/"
    erin = signed_in(new_context, live_server, people["erin"]).new_page()
    emeka = signed_in(new_context, live_server, people["erin"]).new_page()
    erin.goto(url)
    emeka.goto(url)

    # Erin saves twice in a row: her own saves never conflict with each other.
    erin_box = erin.locator(f"#text-{first.pk}")
    erin_box.fill(ERIN_TEXT)
    expect(erin.locator("#save-status")).to_contain_text("All changes saved")
    with saving(erin) as saved:
        erin.locator(f"#criterion-{first.pk}").get_by_label("Points").select_option("3")
    assert saved.value.status == 200
    expect(erin.locator("#conflict")).to_be_empty()
    first.refresh_from_db()
    assert (first.text, first.points) == (ERIN_TEXT, 3)

    # Emeka, who loaded the draft before Erin's saves, edits the same criterion.
    emeka_box = emeka.locator(f"#text-{first.pk}")
    emeka_box.fill(EMEKA_TEXT)
    conflict = emeka.locator("#conflict")
    expect(conflict).to_contain_text("Your change was not saved")
    expect(conflict).to_contain_text("Erin Expert")
    expect(conflict).to_contain_text(ERIN_TEXT)  # the other change, shown
    expect(conflict).to_contain_text(EMEKA_TEXT)  # his own change, kept
    expect(emeka_box).to_have_value(EMEKA_TEXT)  # nothing typed is lost
    expect(emeka.locator("#criteria-list")).to_have_js_property("inert", True)  # paused
    screenshot(emeka, "conflict")
    first.refresh_from_db()
    assert first.text == ERIN_TEXT  # nothing overwritten

    # Having seen Erin's change, Emeka chooses to apply his on top of it.
    settled(emeka)
    with saving(emeka) as saved:
        conflict.get_by_role("button", name="Apply my change on top of theirs").click()
    assert saved.value.status == 200
    expect(emeka.locator("#conflict")).to_be_empty()
    expect(emeka.locator("#rubric-editor")).not_to_have_attribute("data-conflict", "")
    expect(emeka.locator("#save-status")).to_contain_text("All changes saved")
    first.refresh_from_db()
    assert first.text == EMEKA_TEXT
    # His page now holds the latest draft (its rows sent again), so his next edit saves
    # without a conflict once htmx has bound the new rows: it settles them a moment after
    # the swap, and a change made before that would go unheard, by the page as by a person.
    expect(emeka.locator(".htmx-added, .htmx-settling")).to_have_count(0)
    with saving(emeka) as saved:
        emeka.locator(f"#criterion-{first.pk}").get_by_label("Points").select_option("5")
    assert saved.value.status == 200
    expect(emeka.locator("#conflict")).to_be_empty()
    first.refresh_from_db()
    assert first.points == 5

    # Erin's page is now the stale one: her next save is refused in turn.
    erin_box.fill(ERIN_TEXT + " Again.")
    expect(erin.locator("#conflict")).to_contain_text("Erin Expert")
    first.refresh_from_db()
    assert first.text == EMEKA_TEXT
    edits = RubricEvent.objects.filter(rubric=rubric, action="criterion_edited")
    assert {e.actor.username for e in edits} == {"erin"}  # only the assigned author edits
