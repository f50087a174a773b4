"""The researcher's setup pages in Chromium: every one on a 360 px phone and a 1366 px
screen, with no serious or critical axe violation and no sideways scrolling of the page; and
an import through the browser's form, a good file then a refused one."""

import json

from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.llm.models import ModelConfig
from apps.questions.models import Topic
from apps.surveys.models import Scenario
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import violations
from tests.factories import fixture_records, posts_make, user_with_role

SIZES = {"phone": {"width": 360, "height": 740}, "desktop": {"width": 1366, "height": 900}}
WIDER_THAN_SCREEN = "() => document.documentElement.scrollWidth > window.innerWidth + 1"


def test_the_setup_pages_are_accessible_at_both_widths_and_import_through_the_form(
    new_context, live_server, transactional_db, make_study, tmp_path, screenshot
):
    study = make_study(count=2, live=False, name="Messages <at> work")
    item = study.items.get(code="H2")
    batch = posts_make(3)[0].batch
    topic = Topic.objects.get(slug="scams")
    model = ModelConfig.objects.create(
        display_name="GPT-4.1", family="GPT", litellm_model="openai/gpt-4.1", batch_api=True
    )
    pages = [
        "/questions/setup/posts/",
        f"/questions/setup/posts/{batch.pk}/",
        "/questions/setup/questions/",
        "/questions/setup/topics/",
        f"/questions/setup/topics/{topic.pk}/",
        "/studies/setup/import/",
        f"/studies/{study.pk}/items/",
        f"/studies/{study.pk}/items/{item.pk}/",
        "/llm/models/",
        "/llm/models/new/",
        f"/llm/models/{model.pk}/",
        "/rubrics/import/",
    ]
    researcher = user_with_role(Role.RESEARCHER)
    found = {}
    for size, viewport in SIZES.items():
        page = signed_in(new_context, live_server, researcher, viewport=viewport).new_page()
        for url in pages:
            page.goto(url)
            expect(page.get_by_role("heading", level=1)).to_be_visible()
            problems = violations(page)
            if page.evaluate(WIDER_THAN_SCREEN):
                problems.append("the page scrolls sideways")
            found[f"{size} {url}"] = problems
    assert found == {key: [] for key in found}

    # An import through the form (on the 1366 px page still open): a good file, then a bad
    # one, whose refusal lists its problem under the file's name, also free of violations.
    records = fixture_records()[:1]
    records[0]["name"] = "browser1"
    good = tmp_path / "one-scenario.json"
    good.write_text(json.dumps(records))
    page.goto("/studies/setup/import/")
    page.get_by_label("Kind").select_option("scenarios")
    page.get_by_label("File").set_input_files(good)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text(
        "one-scenario.json: 1 scenario(s) imported, 0 skipped"
    )
    assert Scenario.objects.filter(name="browser1").exists()

    records[0]["name"] = "browser2"
    del records[0]["trajectory"]["final_action"]
    bad = tmp_path / "broken-scenario.json"
    bad.write_text(json.dumps(records))
    page.get_by_label("File").set_input_files(bad)
    page.get_by_role("button", name="Import").click()
    refusal = page.get_by_role("alert").filter(has_text="broken-scenario.json")
    expect(refusal).to_contain_text("broken-scenario.json was not imported (nothing was changed)")
    expect(refusal.get_by_role("listitem")).to_have_text(
        "Record 1 (browser2): the field trajectory.final_action is missing."
    )
    assert violations(page) == []
    screenshot(page, "refused")
    assert not Scenario.objects.filter(name="browser2").exists()
