"""A researcher reviews a model's rewrite in Chromium: the differences follow an edit in the
textarea, and after approval the page shows the approved text and its provenance, the
TF-IDF cosine named as Assay's choice. Then the cosine of embeddings with a model the
researcher picks, computed by a real worker while the page follows its progress."""

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.questions.models import EmbeddingCosine, Question
from tests.browser.sessions import signed_in
from tests.factories import (
    ModelConfigFactory,
    question_from_post_make,
    rewrite_made,
    user_with_role,
)
from tests.questions.test_embedding_cosines import PAIRS, approved_bank, embedder
from workers.questions import embedding_cosines_task

WORK_TIMEOUT_MS = 120_000  # generous: the machine may be busy; this is no bound on speed

POST = (
    "Long time lurker, first post. My Instagram got hacked and the email was changed. I "
    "already tried resetting my password twice. What should I do?"
)
REWRITE = (
    "Someone hacked my social media account and changed its email. I've already tried "
    "resetting my password twice. What would you advise me to do?"
)
EDITED = REWRITE.replace("What would you advise me to do?", "How do I get the account back?")


def test_a_rewrite_is_edited_in_the_textarea_and_approved(new_context, live_server, migrated_rows):
    rosa = user_with_role(Role.RESEARCHER, username="rosa", first_name="Rosa", last_name="Reyes")
    question = question_from_post_make(body=POST)
    rewrite = rewrite_made(
        question, text=REWRITE, model=ModelConfigFactory(name="offline-thorough")
    )

    page = signed_in(new_context, live_server, rosa).new_page()
    page.goto("/questions/rewrites/")
    page.get_by_role("link", name=f"Review {question.external_id}").click()
    expect(page.get_by_test_id("original")).to_contain_text("Long time lurker")
    expect(page.get_by_test_id("diff").locator("del").first).to_be_visible()
    expect(page.get_by_role("heading", name="Rewrite offline demo model")).to_be_visible()

    box = page.get_by_label("Question text to approve")
    expect(box).to_have_value(REWRITE)
    box.fill(EDITED)
    # The differences follow the edit (htmx, after a pause in typing).
    expect(page.get_by_test_id("diff").locator("ins").last).to_contain_text("get the account back")
    page.get_by_role("button", name="Approve").click()

    expect(page.get_by_role("status").first).to_contain_text("Approved")
    expect(page.get_by_test_id("rewrite-text")).to_contain_text("How do I get the account back?")
    provenance = page.get_by_test_id("provenance")
    expect(provenance).to_contain_text("offline-thorough")
    expect(provenance).to_contain_text("rewrite version 2")
    expect(page.get_by_test_id("approved-by")).to_have_text("Rosa Reyes")
    expect(page.get_by_test_id("cosine")).to_have_text(
        f"{Question.objects.get().rewrite_cosine:.3f}"
    )
    expect(page.get_by_test_id("cosine-method")).to_contain_text("TF-IDF is Assay's choice")
    expect(page.get_by_label("Question text to approve")).to_have_count(0)
    assert Question.objects.get().text == EDITED and Question.objects.get().rewrite == rewrite


@pytest.mark.worker
def test_the_cosine_of_embeddings_is_computed_with_the_chosen_model_and_shown_beside_it(
    new_context, live_server, route_to_worker, offline_provider, migrated_rows, screenshot
):
    route_to_worker(embedding_cosines_task)
    rosa = user_with_role(Role.RESEARCHER, username="rosa", first_name="Rosa", last_name="Reyes")
    questions = approved_bank(rosa, PAIRS[:2])
    model = embedder(offline_provider(latency_ms=300))

    page = signed_in(new_context, live_server, rosa).new_page()
    page.goto("/questions/rewrites/")
    page.get_by_role("link", name="Cosine of embeddings").click()
    expect(page.get_by_role("heading", name="Cosine of embeddings", level=1)).to_be_visible()
    page.get_by_label("Embedding model").select_option(label=str(model))
    page.get_by_role("button", name="Compute the cosine of every approved rewrite").click()

    jobs = page.get_by_test_id("embedding-jobs")
    expect(jobs).to_contain_text(model.display_name)
    # The table follows the job (htmx poll) until the worker has computed both.
    expect(jobs.get_by_test_id("done")).to_have_text("2", timeout=WORK_TIMEOUT_MS)
    expect(jobs).to_contain_text("Finished", timeout=WORK_TIMEOUT_MS)
    # The means came with the last poll: both questions, no reload.
    mean = page.get_by_test_id("embedding-mean")
    expect(mean).to_contain_text("openai/offline-embed")
    expect(mean.locator("td").nth(3)).to_have_text("2")
    screenshot(page, "embedding-cosines")

    page.goto(f"/questions/rewrites/{questions[0].rewrite_id}/")
    row = EmbeddingCosine.objects.get(question=questions[0])
    expect(page.get_by_test_id("embedding-cosine")).to_have_text(f"{row.cosine:.3f}")
    expect(page.get_by_test_id("provenance")).to_contain_text(
        f"Cosine of embeddings by {model.display_name}"
    )
    expect(page.get_by_test_id("provenance")).to_contain_text("offline-embed; your choice")
