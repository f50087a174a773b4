import pytest

from apps.llm.errors import PromptError
from apps.llm.models import PromptTemplate, Purpose
from apps.llm.selectors import prompt_current, prompt_render
from apps.llm.services import prompt_template_save
from tests.factories import call_recorded


def test_every_purpose_has_a_seeded_default_prompt(db):
    for purpose in Purpose.values:
        template = prompt_current(purpose=purpose)
        assert template.version >= 1 and template.user_text


def test_an_unused_version_is_edited_in_place(db):
    template = prompt_template_save(purpose="rewrite", system_text="", user_text="v: $post")
    edited = prompt_template_save(
        purpose="rewrite", system_text="", user_text="better: $post", template=template
    )
    assert edited.pk == template.pk
    assert edited.user_text == "better: $post"


def test_a_used_version_is_immutable_and_editing_makes_the_next_version(db):
    template = prompt_current(purpose="rewrite")
    call_recorded(template=template)
    template.refresh_from_db()
    assert template.used_at is not None

    edited = prompt_template_save(
        purpose="rewrite", system_text="s", user_text="new: $post", template=template
    )

    assert edited.pk != template.pk
    assert edited.version == template.version + 1
    original = PromptTemplate.objects.get(pk=template.pk)
    assert original.user_text == template.user_text
    assert prompt_current(purpose="rewrite") == edited


def test_render_fills_variables_and_keeps_json_braces(db):
    template = prompt_template_save(
        purpose="grade_criterion", system_text="Grader.", user_text='{"met": true} for $criterion'
    )
    messages = prompt_render(template=template, variables={"criterion": "Mentions 2FA"})
    assert messages == [
        {"role": "system", "content": "Grader."},
        {"role": "user", "content": '{"met": true} for Mentions 2FA'},
    ]


def test_render_names_missing_variables(db):
    with pytest.raises(PromptError, match="question"):
        prompt_render(template=prompt_current(purpose="sample"), variables={})


def test_a_stray_dollar_is_refused_with_its_line(db):
    with pytest.raises(PromptError, match="Line 2"):
        prompt_template_save(purpose="sample", system_text="", user_text="ok\ncosts $ 5")


def test_rendering_a_prompt_writes_nothing(db, django_assert_num_queries):
    template = prompt_template_save(purpose="rewrite", system_text="", user_text="v: $post")
    with django_assert_num_queries(0):
        prompt_render(template=template, variables={"post": "p"})
    template.refresh_from_db()
    assert template.used_at is None
