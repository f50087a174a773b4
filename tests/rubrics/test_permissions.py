"""Who may do what, URL by URL: the roles each view declares, tried with every role."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.accounts.services import user_set_roles
from apps.rubrics import services
from apps.rubrics.models import (
    DraftJob,
    Origin,
    QuestionAssignment,
    RubricImport,
    RubricState,
    SharedCriterionSet,
    Suggestion,
)
from tests.conftest import ROLES
from tests.factories import draft_with_criteria, question_make

pytestmark = pytest.mark.django_db

EXPERT, REVIEWER, RESEARCHER = Role.EXPERT, Role.REVIEWER, Role.RESEARCHER
ANY = {EXPERT, REVIEWER, RESEARCHER}
ALLOWED = {
    "index": ANY,
    "question": ANY,
    "rubric": ANY,
    "history": ANY,
    "start": {EXPERT},
    "claim": {EXPERT},
    "criterion_add": {EXPERT},
    "criterion_edit": {EXPERT},
    "criterion_delete": {EXPERT},
    "criterion_move": {EXPERT},
    "suggest": {EXPERT},
    "suggestions": {EXPERT},
    "suggestion_accept": {EXPERT},
    "suggestion_reject": {EXPERT},
    "submit": {EXPERT},
    "start_next": {EXPERT},
    "samples": {EXPERT, REVIEWER},
    "comment": {EXPERT, REVIEWER},
    "request_changes": {REVIEWER},
    "approve": {REVIEWER},
    "claim_review": {REVIEWER},
    "workspace": {RESEARCHER},
    "assign": {RESEARCHER},
    "topic_claiming": {RESEARCHER},
    "shared": {RESEARCHER},
    "freshness": {RESEARCHER},
    "export": {RESEARCHER},
    "import": {RESEARCHER},
    "import_preview": {RESEARCHER},
}


@pytest.fixture
def urls(expert, researcher):
    question = question_make()
    rubric = draft_with_criteria(question, expert)
    criterion = rubric.criteria.exclude(origin=Origin.SHARED).first()
    job = DraftJob.objects.create(rubric=rubric, model=_model(), prompt=_prompt(), status="done")
    suggestion = Suggestion.objects.create(
        job=job, rubric=rubric, text="x", polarity="positive", kind="factual", points=1, order=1
    )
    upload = RubricImport.objects.create(
        filename="f.json", sha256="0", content="{}", format="assay"
    )
    pk, q, c = rubric.pk, question.pk, criterion.pk
    args = {
        "question": [q],
        "start": [q],
        "claim": [q],
        "history": [q],
        "assign": [q],
        "topic_claiming": [question.topic_id],
        "import_preview": [upload.pk],
        "criterion_edit": [pk, c],
        "criterion_delete": [pk, c],
        "criterion_move": [pk, c],
        "suggestion_accept": [pk, suggestion.pk],
        "suggestion_reject": [pk, suggestion.pk],
    }
    no_args = {"index", "workspace", "shared", "freshness", "export", "import"}
    return {
        name: reverse(f"rubrics:{name}", args=[] if name in no_args else args.get(name, [pk]))
        for name in ALLOWED
    }


def _model():
    from apps.llm.models import ModelConfig

    return ModelConfig.objects.create(
        display_name="m", family="f", litellm_model="openai/offline-terse"
    )


def _prompt():
    from apps.llm.selectors import prompt_current

    return prompt_current(purpose="rubric_draft")


def test_every_rubrics_url_is_in_the_table():
    from django.urls import get_resolver

    names = {
        p.name
        for p in get_resolver().url_patterns
        if getattr(p, "namespace", None) == "rubrics"
        for p in p.url_patterns
    }
    assert names == set(ALLOWED)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_each_role_reaches_only_what_it_may(client, make_user, urls, role):
    client.force_login(make_user(role))
    for name, url in urls.items():
        response = client.get(url)
        if role in ALLOWED[name]:
            assert response.status_code in (200, 302), (name, response.status_code)
            assert "/accounts/login/" not in response.get("Location", ""), name
        else:
            assert response.status_code == 403, (name, role, response.status_code)


def test_anonymous_visitors_and_participants_get_nothing(client, urls):
    # Participants have no account: to these pages they are anonymous visitors.
    for name, url in urls.items():
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302, name
            assert response["Location"].startswith(reverse("login")), name


def test_only_experts_edit(client, make_user, expert):
    rubric = draft_with_criteria(question_make(), expert)
    before = rubric.criteria.count()
    for role in (REVIEWER, RESEARCHER, None):
        client.force_login(make_user(role))
        response = client.post(
            reverse("rubrics:criterion_add", args=[rubric.pk]),
            {
                "revision": rubric.revision,
                "text": "Intruder.",
                "polarity": "positive",
                "kind": "factual",
                "points": "1",
            },
        )
        assert response.status_code == 403
    assert rubric.criteria.count() == before


def test_only_a_reviewer_who_is_not_the_author_approves(client, make_user, expert, reviewer):
    author_reviewer = make_user(EXPERT)
    user_set_roles(user=author_reviewer, roles=[EXPERT, REVIEWER])
    question = question_make()
    rubric = draft_with_criteria(question, author_reviewer)
    services.rubric_submit_for_review(rubric=rubric, user=author_reviewer)
    url = reverse("rubrics:approve", args=[rubric.pk])

    client.force_login(expert)
    assert client.post(url).status_code == 403
    client.force_login(author_reviewer)
    refused = client.post(url, follow=True)
    assert "another reviewer must review it" in refused.text
    rubric.refresh_from_db()
    assert rubric.state == RubricState.IN_REVIEW

    client.force_login(reviewer)
    client.post(url)
    rubric.refresh_from_db()
    assert rubric.state == RubricState.APPROVED and rubric.approved_by == reviewer


def test_researchers_manage_assignments_and_shared_criteria(client, make_user, expert, reviewer):
    question = question_make()
    assign_url = reverse("rubrics:assign", args=[question.pk])
    shared_url = reverse("rubrics:shared")
    rows = {
        "text": ["Answers in plain words."],
        "polarity": ["positive"],
        "points": ["2"],
        "notes": "Simpler.",
    }
    for role in (EXPERT, REVIEWER):
        client.force_login(make_user(role))
        assert client.post(assign_url, {"author": expert.pk}).status_code == 403
        assert client.post(shared_url, rows).status_code == 403
    assert not QuestionAssignment.objects.exists() and SharedCriterionSet.objects.count() == 2

    client.force_login(make_user(RESEARCHER))
    client.post(assign_url, {"author": expert.pk, "reviewer": reviewer.pk})
    assert QuestionAssignment.objects.get().author == expert
    response = client.post(shared_url, rows)
    assert response.status_code == 302
    newest = SharedCriterionSet.objects.get(version=3)
    assert list(newest.criteria.values_list("text", "points")) == [("Answers in plain words.", 2)]
