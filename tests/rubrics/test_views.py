import re
from pathlib import Path

import pytest
from django.urls import reverse

from apps.rubrics import services
from apps.rubrics.models import (
    AuthoringSettings,
    DraftJob,
    Origin,
    Rubric,
    RubricImport,
    RubricState,
)
from apps.rubrics.selectors import topic_progress
from apps.rubrics.services.drafting import DRAFT_WORK
from apps.runs.models import Response
from apps.runs.services import REFERENCE_WORK, reference_models_set
from tests.factories import (
    CRITERIA,
    approved_rubric,
    assign,
    draft_with_criteria,
    job_run,
    offline_model,
    question_assigned,
    question_make,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def draft(expert, reviewer):
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    return draft_with_criteria(question, expert)


def own(rubric):
    return list(rubric.criteria.exclude(origin=Origin.SHARED).order_by("order"))


def criterion_data(rubric, **values):
    rubric.refresh_from_db()
    return {
        "revision": rubric.revision,
        "text": "Mentions the recovery form.",
        "polarity": "positive",
        "kind": "factual",
        "points": "3",
        **values,
    }


def test_the_editor_shows_criteria_shared_criteria_totals_and_the_question(client, expert, draft):
    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    assert draft.question.text in page
    assert "Recommends turning on two-factor authentication." in page
    assert "Shared presentation criteria" in page and "Is overly imperative" in page
    assert 'data-testid="max-points">25<' in page  # 13 own + 12 shared
    assert f'name="revision" value="{draft.revision}"' in page
    assert "Suggest criteria" in page and "Submit for review" in page


def test_adding_with_htmx_returns_fragments_and_updates_totals(client, expert, draft):
    client.force_login(expert)
    url = reverse("rubrics:criterion_add", args=[draft.pk])
    response = client.post(url, criterion_data(draft, points="5"), **HX)
    assert response.status_code == 200
    body = response.text
    assert body.lstrip().startswith('<form id="add-criterion"')
    assert 'id="criteria-list" class="criteria" hx-swap-oob="true"' in body
    assert 'data-testid="max-points">30<' in body
    assert f'id="rubric-revision" value="{draft.revision + 1}" hx-swap-oob="true"' in body
    assert [c.text for c in own(draft)][-1] == "Mentions the recovery form."


def test_adding_without_javascript_redirects_back_to_the_editor(client, expert, draft):
    client.force_login(expert)
    response = client.post(reverse("rubrics:criterion_add", args=[draft.pk]), criterion_data(draft))
    added = own(draft)[-1]
    assert response.status_code == 302
    assert (
        response["Location"]
        == reverse("rubrics:rubric", args=[draft.pk]) + f"#criterion-{added.pk}"
    )


@pytest.mark.parametrize(
    "values,message",
    [
        ({"text": "   "}, "the text is empty"),
        ({"points": "4"}, "Points must be 5, 3, 2 or 1."),
        ({"text": "recommends turning on two-factor  authentication."}, "already in this rubric"),
    ],
)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_invalid_additions_explain_themselves_and_keep_the_input(
    client, expert, draft, values, message, htmx
):
    client.force_login(expert)
    before = len(own(draft))
    data = criterion_data(draft, **values)
    response = client.post(
        reverse("rubrics:criterion_add", args=[draft.pk]), data, **(HX if htmx else {})
    )
    assert response.status_code == 422
    assert message in response.text
    if values.get("text", "x").strip():
        assert data["text"].strip() in response.text
    assert len(own(draft)) == before


def test_autosave_with_htmx_swaps_nothing_but_status_totals_and_etag(client, expert, draft):
    client.force_login(expert)
    target = own(draft)[0]
    url = reverse("rubrics:criterion_edit", args=[draft.pk, target.pk])
    response = client.post(
        url, criterion_data(draft, text="Recommends an authenticator app.", points="2"), **HX
    )
    assert response.status_code == 200
    assert 'id="save-status"' in response.text and "All changes saved" in response.text
    assert 'id="criteria-list"' not in response.text  # the row being typed in is left alone
    target.refresh_from_db()
    assert (target.text, target.points) == ("Recommends an authenticator app.", 2)


def test_an_invalid_edit_shows_its_error_beside_the_criterion(client, expert, draft):
    client.force_login(expert)
    target = own(draft)[0]
    url = reverse("rubrics:criterion_edit", args=[draft.pk, target.pk])
    response = client.post(url, criterion_data(draft, text=""), **HX)
    assert response.status_code == 422 and response["HX-Reswap"] == "none"
    assert f'id="criterion-{target.pk}-errors"' in response.text
    assert "the text is empty" in response.text
    plain = client.post(url, criterion_data(draft, points="7"))
    assert plain.status_code == 422 and "Points must be 5, 3, 2 or 1." in plain.text


def test_a_refused_edit_says_not_saved_and_a_later_save_clears_its_message(client, expert, draft):
    client.force_login(expert)
    target = own(draft)[0]
    url = reverse("rubrics:criterion_edit", args=[draft.pk, target.pk])
    refused = client.post(url, criterion_data(draft, text=""), **HX)
    assert 'id="save-status"' in refused.text and "Not saved: " in refused.text
    assert "All changes saved" not in refused.text
    fixed = client.post(url, criterion_data(draft, text="Mentions the bank's fraud line."), **HX)
    assert fixed.status_code == 200 and "All changes saved" in fixed.text
    # The row's message box comes back empty, so the old message does not stay beside it.
    errors = re.search(rf'<div id="criterion-{target.pk}-errors"[^>]*>(.*?)</div>', fixed.text)
    assert errors and errors.group(1) == ""


def test_a_researcher_sees_no_reference_answers_control_they_may_not_use(client, researcher, draft):
    client.force_login(researcher)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk]))
    assert page.status_code == 200
    assert "Show two" not in page.text
    assert reverse("rubrics:samples", args=[draft.pk]) not in page.text
    assert client.post(reverse("rubrics:samples", args=[draft.pk]), **HX).status_code == 403


def test_criterion_boxes_hold_a_long_criterion(client, expert, draft):
    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    boxes = re.findall(r'<textarea id="(?:text-\d+|new-text)"[^>]*>', page)
    assert boxes and all('maxlength="1000"' in b and "data-autosize" in b for b in boxes)


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_stale_save_is_refused_shows_the_other_change_and_keeps_both(client, expert, draft, htmx):
    target = own(draft)[0]
    stale = draft.revision
    services.criterion_update(  # the author, in another window
        rubric=draft,
        criterion_id=target.pk,
        user=expert,
        revision=stale,
        text="Emeka's version of the criterion.",
        polarity="positive",
        kind="factual",
        points=5,
    )
    client.force_login(expert)
    url = reverse("rubrics:criterion_edit", args=[draft.pk, target.pk])
    data = {**criterion_data(draft, text="Erin's version of the criterion."), "revision": stale}
    response = client.post(url, data, **(HX if htmx else {}))

    assert response.status_code == 409
    body = response.text
    assert "Your change was not saved" in body
    assert "Erin Expert" in body and "edited a criterion" in body
    assert "Emeka&#x27;s version of the criterion." in body
    assert "Erin&#x27;s version of the criterion." in body  # kept, ready to apply
    assert "Apply my change on top of theirs" in body
    if htmx:
        assert response["HX-Reswap"] == "none" and 'id="conflict"' in body
    target.refresh_from_db()
    assert target.text == "Emeka's version of the criterion."


def test_applying_a_kept_change_on_top_saves_it_and_refreshes_the_list(client, expert, draft):
    target = own(draft)[0]
    client.force_login(expert)
    url = reverse("rubrics:criterion_edit", args=[draft.pk, target.pk])
    data = {**criterion_data(draft, text="Applied on top."), "resolve": "1"}
    response = client.post(url, data, **HX)
    assert response.status_code == 200
    assert 'id="criteria-list" class="criteria" hx-swap-oob="true"' in response.text
    assert '<section id="conflict" hx-swap-oob="true">' in response.text


def test_delete_and_move_return_the_list(client, expert, draft):
    client.force_login(expert)
    first, second, third = own(draft)
    move = client.post(
        reverse("rubrics:criterion_move", args=[draft.pk, third.pk]),
        {"revision": draft.revision, "direction": "up"},
        **HX,
    )
    assert move.status_code == 200 and move.text.lstrip().startswith('<ol id="criteria-list"')
    assert [c.pk for c in own(draft)] == [first.pk, third.pk, second.pk]
    draft.refresh_from_db()
    delete = client.post(
        reverse("rubrics:criterion_delete", args=[draft.pk, first.pk]), {"revision": draft.revision}
    )
    assert delete.status_code == 302
    assert [c.pk for c in own(draft)] == [third.pk, second.pk]


def test_an_approved_version_offers_no_editing_and_refuses_posts(client, expert, reviewer):
    rubric = approved_rubric(question_make(), expert, reviewer)
    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[rubric.pk])).text
    assert "An approved version cannot be changed" in page
    assert 'name="text"' not in page and "Edit as version 2" in page
    target = own(rubric)[0]
    response = client.post(
        reverse("rubrics:criterion_edit", args=[rubric.pk, target.pk]),
        criterion_data(rubric, text="Sneaky in-place edit."),
        **HX,
    )
    assert response.status_code == 422 and "is approved and cannot be changed" in response.text
    target.refresh_from_db()
    assert target.text != "Sneaky in-place edit."
    response = client.post(reverse("rubrics:start_next", args=[rubric.pk]))
    nxt = rubric.question.rubrics.get(version=2)
    assert response["Location"] == reverse("rubrics:rubric", args=[nxt.pk])


def test_review_through_the_pages(client, expert, reviewer, draft):
    client.force_login(expert)
    client.post(reverse("rubrics:submit", args=[draft.pk]))
    draft.refresh_from_db()
    assert draft.state == RubricState.IN_REVIEW

    client.force_login(reviewer)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    assert "Request changes" in page and "Approve" in page
    target = own(draft)[1]
    comment = client.post(
        reverse("rubrics:comment", args=[draft.pk]),
        {"body": "Say where the <activity> page is.", "criterion": target.pk},
        **HX,
    )
    assert comment.status_code == 200
    assert "Say where the &lt;activity&gt; page is." in comment.text
    client.post(reverse("rubrics:request_changes", args=[draft.pk]), {"message": ""})
    draft.refresh_from_db()
    assert draft.state == RubricState.CHANGES_REQUESTED

    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    assert "The reviewer requested changes" in page and "Say where the &lt;activity&gt;" in page


def test_history_lists_every_version_with_who_did_what(client, expert, reviewer):
    rubric = approved_rubric(question_make(), expert, reviewer)
    nxt = services.rubric_start(question=rubric.question, user=expert)
    target = own(nxt)[0]
    services.criterion_update(
        rubric=nxt,
        criterion_id=target.pk,
        user=expert,
        revision=nxt.revision,
        text=target.text + " Today.",
        polarity="positive",
        kind="factual",
        points=5,
    )
    client.force_login(reviewer)
    page = client.get(reverse("rubrics:history", args=[rubric.question.pk])).text
    assert "Version 2" in page and "Version 1" in page
    assert "Changes from version 1" in page and "authentication. <ins>Today.</ins>" in page
    assert "Rosa Reviewer</strong> approved" in page
    assert "Erin Expert</strong> edited a criterion" in page


def test_pages_escape_what_people_wrote(client, expert):
    question = question_make(text="<img src=x onerror=alert(1)> my account?")
    rubric = draft_with_criteria(
        question, expert, [("<script>alert('x')</script> is said", "negative", "factual", 2)]
    )
    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[rubric.pk])).text
    assert "<script>alert(" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_suggest_enqueues_the_task_after_commit_and_the_panel_polls(
    client, expert, draft, offline_provider_url, django_capture_on_commit_callbacks
):
    model = offline_model(offline_provider_url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": model})
    client.force_login(expert)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("rubrics:suggest", args=[draft.pk]), **HX)
    assert len(callbacks) == 1
    job = DraftJob.objects.get(rubric=draft)
    assert "Waiting for a worker" in response.text and "offline demo model" in response.text
    assert f'hx-get="{reverse("rubrics:suggestions", args=[draft.pk])}"' in response.text
    assert 'hx-trigger="every 1s"' in response.text

    job_run(DRAFT_WORK, job.pk)
    panel = client.get(reverse("rubrics:suggestions", args=[draft.pk]), **HX).text
    assert 'hx-trigger="every 1s"' not in panel
    assert panel.count('data-testid="suggestion"') == job.suggestions.count() > 0
    plain = client.get(reverse("rubrics:suggestions", args=[draft.pk]))
    assert plain.status_code == 302 and plain["Location"].endswith("#suggestions")


def test_accepting_a_suggestion_with_htmx_adds_it_to_the_list(
    client, expert, draft, offline_provider_url
):
    model = offline_model(offline_provider_url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": model})
    job, _ = services.draft_job_request(rubric=draft, user=expert)
    job_run(DRAFT_WORK, job.pk)
    suggestion = job.suggestions.first()
    client.force_login(expert)
    draft.refresh_from_db()
    response = client.post(
        reverse("rubrics:suggestion_accept", args=[draft.pk, suggestion.pk]),
        {"revision": draft.revision},
        **HX,
    )
    assert response.status_code == 200
    assert 'hx-swap-oob="true"' in response.text and "LLM-suggested" in response.text
    assert own(draft)[-1].origin == Origin.LLM_SUGGESTED


def test_sample_answers_are_drawn_generated_and_labelled_offline(
    client, expert, draft, offline_provider_url, django_capture_on_commit_callbacks
):
    models = [
        offline_model(offline_provider_url, name=n) for n in ("offline-terse", "offline-friendly")
    ]
    reference_models_set(models=models)
    client.force_login(expert)
    url = reverse("rubrics:samples", args=[draft.pk])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(url, {"exclude": ""}, **HX)
    assert len(callbacks) == 2 and "Asking the model" in response.text
    assert 'hx-trigger="every 1s"' in response.text
    for answer in Response.objects.all():
        job_run(REFERENCE_WORK, answer.pk)
    ids = ",".join(str(pk) for pk in Response.objects.values_list("pk", flat=True))
    shown = client.get(url, {"show": ids}, **HX).text
    assert shown.count('data-testid="sample-answer"') == 2
    assert shown.count("offline demo model") == 2 and "every 1s" not in shown
    assert "Show two others" in shown
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    assert page.count('data-testid="sample-answer"') == 2  # kept answers show at once


def test_the_consistency_panel_shows_similar_questions_with_approved_criteria(
    client, expert, reviewer
):
    target = question_assigned(
        expert, text="My Instagram account was stolen and the email was changed."
    )
    similar = question_make(text="My Instagram account was stolen and the phone was changed.")
    approved_rubric(similar, expert, reviewer)
    rubric = services.rubric_start(question=target, user=expert)
    client.force_login(expert)
    page = client.get(reverse("rubrics:rubric", args=[rubric.pk])).text
    assert "Similar questions in accounts" in page
    assert similar.external_id in page and "Recommends turning on two-factor" in page


def test_home_lists_an_experts_rubrics_by_state_and_a_reviewers_queue(client, expert, reviewer):
    mine = question_make()
    assign(mine, author=expert, reviewer=reviewer)
    rubric = draft_with_criteria(mine, expert)
    waiting = question_make()
    assign(waiting, author=expert, reviewer=reviewer)
    client.force_login(expert)
    home = client.get(reverse("home")).text
    assert 'data-state="draft"' in home and mine.external_id in home
    assert 'data-state="not_started"' in home and waiting.external_id in home
    assert "Progress by topic" in home

    services.rubric_submit_for_review(rubric=rubric, user=expert)
    client.force_login(reviewer)
    home = client.get(reverse("home")).text
    assert 'data-state="review-mine"' in home and mine.external_id in home


def test_the_workspace_assigns_with_and_without_htmx(client, researcher, expert, reviewer):
    question = question_make()
    client.force_login(researcher)
    url = reverse("rubrics:assign", args=[question.pk])
    response = client.post(url, {"author": expert.pk, "reviewer": reviewer.pk}, **HX)
    assert response.status_code == 200 and "Saved." in response.text
    assert question.assignment.author == expert
    refused = client.post(url, {"author": expert.pk, "reviewer": expert.pk})
    assert refused.status_code == 302
    assert question.assignment.reviewer == reviewer


def test_the_index_filters_by_state_with_and_without_htmx(client, expert, reviewer):
    drafted = question_make()
    draft_with_criteria(drafted, expert)
    untouched = question_make()
    client.force_login(reviewer)
    url = reverse("rubrics:index")
    fragment = client.get(url, {"state": "not_started"}, **HX).text
    assert fragment.lstrip().startswith('<div id="question-table"')
    assert untouched.external_id in fragment and drafted.external_id not in fragment
    page = client.get(url, {"state": "draft"}).text
    assert "<h1>Rubrics</h1>" in page
    assert drafted.external_id in page and untouched.external_id not in page


def test_a_researcher_previews_then_commits_an_import(client, researcher):
    client.force_login(researcher)
    path = Path(__file__).parent / "data" / "healthbench-format-sample.jsonl"
    with path.open("rb") as upload:
        response = client.post(
            reverse("rubrics:import"),
            {
                "file": upload,
                "format": "healthbench",
                "points_mapping": "refuse",
                "conversation": "refuse",
            },
        )
    page = response.content.decode()
    assert "was not imported (nothing was changed)" in page and "choose a points mapping" in page
    assert not RubricImport.objects.exists()  # a refused upload is not kept

    with path.open("rb") as upload:
        response = client.post(
            reverse("rubrics:import"),
            {
                "file": upload,
                "format": "healthbench",
                "points_mapping": "bands",
                "conversation": "join",
                "default_topic": "",
            },
        )
    preview = client.get(response["Location"]).text
    assert "HealthBench maximum 16 (positive points only) → Assay maximum 14" in preview
    assert "-6 → should avoid, earns 3 when avoided" in preview
    assert "Import 3 rubrics as drafts" in preview and "Rescale these points" in preview
    client.post(response["Location"])  # without confirming the rescaling
    assert not Rubric.objects.exists()
    client.post(response["Location"], {"confirm_rescale": "1"})
    assert Rubric.objects.filter(state=RubricState.DRAFT).count() == 3


def test_exports_download_in_both_formats(client, researcher, expert, reviewer):
    approved_rubric(question_make(), expert, reviewer)
    client.force_login(researcher)
    url = reverse("rubrics:export")
    assert "About the HealthBench format" in client.get(url).text
    assay = client.get(url, {"format": "assay"})
    assert assay["Content-Type"].startswith("application/json")
    assert assay.json()["format"] == "assay-questions/1"
    jsonl = client.get(url, {"format": "healthbench"})
    assert 'filename="rubrics-' in jsonl["Content-Disposition"]
    assert jsonl.content.decode().count("\n") == 1


def test_a_refused_delete_applied_from_the_conflict_panel_resends_the_whole_editor(
    client, expert, draft
):
    target = own(draft)[0]
    stale = draft.revision
    services.criterion_add(  # the author, in another window
        rubric=draft,
        user=expert,
        revision=stale,
        text="Emeka's addition.",
        polarity="negative",
        kind="factual",
        points=2,
    )
    client.force_login(expert)
    url = reverse("rubrics:criterion_delete", args=[draft.pk, target.pk])
    refused = client.post(url, {"revision": stale}, **HX)
    assert refused.status_code == 409 and "Emeka&#x27;s addition." in refused.text
    assert own(draft)[0] == target

    draft.refresh_from_db()
    applied = client.post(url, {"revision": draft.revision, "resolve": "1"}, **HX)
    assert applied.status_code == 200
    assert 'id="criteria-list" class="criteria" hx-swap-oob="true"' in applied.text
    assert 'id="add-criterion"' in applied.text and "Emeka&#x27;s addition." in applied.text
    assert target.pk not in [c.pk for c in own(draft)]


def test_topic_progress_lists_the_topics_in_their_order():
    assert [row["topic"].slug for row in topic_progress()][:3] == [
        "accounts",
        "moderation-tools",
        "security-tools",
    ]


def test_submitting_with_htmx_redirects_the_page_once_pending_saves_are_done(client, expert, draft):
    client.force_login(expert)
    response = client.post(reverse("rubrics:submit", args=[draft.pk]), **HX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("rubrics:rubric", args=[draft.pk])
    draft.refresh_from_db()
    assert draft.state == RubricState.IN_REVIEW


def test_the_console_shows_a_rubrics_criteria_and_a_shared_sets_read_only(
    client, expert, reviewer, researcher
):
    from apps.rubrics.models import SharedCriterionSet

    rubric = approved_rubric(question_make(), expert, reviewer)
    shared = SharedCriterionSet.objects.order_by("-version").first()
    client.force_login(researcher)

    for url, text in (
        (reverse("admin:rubrics_rubric_change", args=[rubric.pk]), CRITERIA[0][0]),
        (reverse("admin:rubrics_sharedcriterionset_change", args=[shared.pk]), ""),
    ):
        response = client.get(url)
        page = response.content.decode()
        assert response.status_code == 200 and text in page
        # Shown, not editable: no inputs for the rows and no way to add or delete one.
        assert "-0-order" not in page and "-0-text" not in page and "-0-points" not in page
        assert '-MAX_NUM_FORMS" value="0"' in page and "-0-DELETE" not in page


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_an_expert_not_assigned_to_the_question_is_refused_with_403(client, expert2, draft, htmx):
    client.force_login(expert2)
    page = client.get(reverse("rubrics:rubric", args=[draft.pk])).text
    assert 'id="add-criterion"' not in page and "Submit for review" not in page
    target = own(draft)[0]
    posts = {
        "criterion_add": ([draft.pk], criterion_data(draft, text="An outsider's criterion.")),
        "criterion_edit": ([draft.pk, target.pk], criterion_data(draft, text="Rewritten.")),
        "criterion_delete": ([draft.pk, target.pk], {"revision": draft.revision}),
        "criterion_move": (
            [draft.pk, target.pk],
            {"revision": draft.revision, "direction": "down"},
        ),
        "submit": ([draft.pk], {}),
    }
    for name, (args, data) in posts.items():
        response = client.post(reverse(f"rubrics:{name}", args=args), data, **(HX if htmx else {}))
        assert response.status_code == 403, name
        assert "Erin Expert is assigned to write this rubric" in response.text, name
        if htmx:
            assert response["HX-Reswap"] == "none" and 'id="save-status"' in response.text
    draft.refresh_from_db()
    assert draft.state == RubricState.DRAFT
    assert [c.text for c in own(draft)] == [text for text, *_ in CRITERIA]


@pytest.mark.parametrize("role", ["reviewer", "researcher"])
def test_reviewers_and_researchers_cannot_edit_or_submit_a_draft(client, request, draft, role):
    client.force_login(request.getfixturevalue(role))
    add = client.post(reverse("rubrics:criterion_add", args=[draft.pk]), criterion_data(draft))
    submit = client.post(reverse("rubrics:submit", args=[draft.pk]), **HX)
    assert (add.status_code, submit.status_code) == (403, 403)
    draft.refresh_from_db()
    assert draft.state == RubricState.DRAFT and len(own(draft)) == len(CRITERIA)


def test_the_assigned_author_edits_and_submits(client, expert, draft):
    client.force_login(expert)
    added = client.post(
        reverse("rubrics:criterion_add", args=[draft.pk]), criterion_data(draft), **HX
    )
    submitted = client.post(reverse("rubrics:submit", args=[draft.pk]))
    assert added.status_code == 200 and submitted.status_code == 302
    draft.refresh_from_db()
    assert draft.state == RubricState.IN_REVIEW and len(own(draft)) == len(CRITERIA) + 1


def test_an_unassigned_expert_cannot_start_a_rubric(client, expert2):
    question = question_make()
    client.force_login(expert2)
    assert (
        "Start the rubric" not in client.get(reverse("rubrics:question", args=[question.pk])).text
    )
    response = client.post(reverse("rubrics:start", args=[question.pk]))
    assert response.status_code == 403 and "No one is assigned" in response.text
    assert not Rubric.objects.filter(question=question).exists()
