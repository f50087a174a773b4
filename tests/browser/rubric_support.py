"""What the rubric browser tests share: signed-in contexts, a worker for the model calls,
the offline models, and a question to write a rubric for."""

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from apps.accounts.roles import Role
from apps.rubrics.models import AuthoringSettings
from apps.rubrics.views import drafting as drafting_views
from apps.runs.services import reference_models_set
from tests.factories import user_with_role
from tests.llm.models import offline_model
from tests.rubrics.factories import assign, question_make

QUESTION = (
    "I got a text saying my bank account is locked and to log in at a link. I clicked it and "
    "typed my password before I noticed the address looked odd. What should I do now?"
)


class Routed:
    """A task whose messages go to the test worker's own queue (a `make run` worker sharing
    the broker must not take them); the worker runs the real task."""

    def __init__(self, task, queue: str):
        self.task, self.queue = task, queue

    def delay(self, *args):
        return self.task.apply_async(args=args, queue=self.queue)


@pytest.fixture
def llm_worker(start_worker, monkeypatch, offline_provider):
    queue, _process = start_worker()
    for name in ("draft_criteria_task", "sample_answer_task"):
        monkeypatch.setattr(drafting_views, name, Routed(getattr(drafting_views, name), queue))
    url = offline_provider(latency_ms=150)
    draft_model = offline_model(url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": draft_model})
    reference_models_set(
        models=[offline_model(url, name=n) for n in ("offline-terse", "offline-friendly")]
    )
    return queue


@pytest.fixture
def people(migrated_rows):
    return {
        "erin": user_with_role(Role.EXPERT, username="erin", first_name="Erin", last_name="Expert"),
        "emeka": user_with_role(
            Role.EXPERT, username="emeka", first_name="Emeka", last_name="Expert"
        ),
        "rosa": user_with_role(
            Role.REVIEWER, username="rosa", first_name="Rosa", last_name="Reviewer"
        ),
    }


@pytest.fixture
def question(people):
    question = question_make(topic="scams", text=QUESTION, external_id="scams-bank-text")
    assign(question, author=people["erin"], reviewer=people["rosa"])
    return question


def signed_in(new_context, live_server, user, **kwargs):
    """A browser context whose session is `user`'s (the login form has its own tests)."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "apps.accounts.backends.RoleBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    context = new_context(**kwargs)
    context.add_cookies(
        [{"name": "sessionid", "value": session.session_key, "url": live_server.url}]
    )
    return context
