"""The home page and the navigation: each role is shown its work and can reach every area
of the site it may use."""

import re

import pytest
from django.urls import resolve, reverse

from apps.accounts.roles import Role
from apps.llm.models import PromptTemplate, Purpose, RunStatus
from apps.runs.models import Response, ResponseStatus, SamplingRun
from tests.accounts.test_permission_inventory import ALL
from tests.factories import ModelConfigFactory, question_make

NAV = re.compile(r'<nav aria-label="Main">(.*?)</nav>', re.S)
HREF = re.compile(r'href="([^"]+)"')


def test_researchers_home_lists_studies_with_their_state_and_progress(role_client, make_study):
    study = make_study(
        count=4, name="Workplace messages", ratings_per_scenario=3, scenarios_per_participant=2
    )
    body = role_client(Role.RESEARCHER).get(reverse("home")).content.decode()
    assert "No studies" not in body
    assert reverse("surveys:study_detail", args=[study.pk]) in body
    assert "Workplace messages" in body
    assert "Live" in body
    assert "0 of 12 completed" in body


def test_researchers_home_lists_sampling_runs_with_their_state_and_progress(role_client):
    run = SamplingRun.objects.create(
        name="Nine topics, three models",
        status=RunStatus.RUNNING,
        prompt=PromptTemplate.objects.get(purpose=Purpose.SAMPLE, version=1),
    )
    model = ModelConfigFactory()
    for index, status in enumerate([ResponseStatus.DONE, ResponseStatus.PENDING]):
        Response.objects.create(
            run=run, model=model, question=question_make(), sample_index=index, status=status
        )
    body = role_client(Role.RESEARCHER).get(reverse("home")).content.decode()
    assert "Nine topics, three models" in body
    assert "Running" in body
    assert "1 of 2 done" in body


def test_home_says_so_when_there_are_no_studies_or_runs(role_client):
    body = role_client(Role.RESEARCHER).get(reverse("home")).content.decode()
    assert "No studies yet" in body
    assert "No sampling runs yet" in body


def areas_for(role: Role) -> set[str]:
    """The URL namespaces that hold a page `role` may open (the console: researchers)."""
    areas = set()
    for _route, name, pattern in ALL:
        if name == "admin":
            if role == Role.RESEARCHER:
                areas.add("admin")
            continue
        roles = getattr(pattern.callback, "required_roles", frozenset())
        if ":" in (name or "") and role in roles:
            areas.add(name.split(":")[0])
    return areas


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_the_navigation_reaches_every_area_the_role_may_use(role_client, role):
    client = role_client(role)
    links = HREF.findall(NAV.search(client.get(reverse("home")).content.decode()).group(1))
    reached = {resolve(link.split("?")[0]).namespace for link in links} - {""}
    assert areas_for(role) <= reached
    assert all(client.get(link).status_code == 200 for link in links)  # and each one opens


def test_researchers_reach_studies_usage_and_the_console_from_the_navigation(role_client):
    body = role_client(Role.RESEARCHER).get(reverse("home")).content.decode()
    nav = NAV.search(body).group(1)
    for url in (reverse("surveys:study_list"), reverse("llm:usage"), reverse("admin:index")):
        assert f'href="{url}"' in nav


def test_researchers_home_shows_the_question_bank_pipeline_stage_by_stage(role_client):
    from apps.questions.models import Sample, SampledPost, Topic
    from tests.factories import posts_make

    posts = posts_make(3, topics=("scams",))
    sample = Sample.objects.create(topic=Topic.objects.get(name="scams"), size=2, seed=1, pool=3)
    for position, post in enumerate(posts[:2]):
        SampledPost.objects.create(sample=sample, post=post, topic=sample.topic, position=position)
    body = role_client(Role.RESEARCHER).get(reverse("home")).content.decode()
    assert "Candidate pool: 3 posts from 1 file" in body
    assert "Sampled: 2" in body
    assert "Screening: 2 still open, 0 included" in body
    assert reverse("questions:screening") in body


def test_experts_home_has_no_question_bank_panel(role_client):
    body = role_client(Role.EXPERT).get(reverse("home")).content.decode()
    assert "Candidate pool" not in body
