"""Survey-proxy prompt v3: an answer study's survey as participants see it, and nothing more.

In an answer study people read a question someone asked and an answer to it (or two answers,
A and B, to compare), then the items asked of that unit. Version 2 speaks of "the scenario"
and "the assistant's response", which would be untrue of a question and its answers; this
version puts the unit as the participant's page does, with the same reply format as version
2 and no system message, no persona. A proxy run of an answer study takes it by default
(apps/surveys/selectors.py, proxy_prompt_default), and a run of a scenario study never can:
its variables are the answer units' (apps/llm/models.py, PROMPT_VARIABLES).

The text is copied here as it was made, so that this migration never changes: the product
recognises it (apps/surveys/selectors.py, PROXY_ANSWERS_USER_TEXT), and a test holds the two
to the same words.
"""

from django.db import migrations

USER_TEXT = (
    "The question:\n<question>\n$question\n</question>\n\n"
    "$answers\n\n"
    "The survey's questions:\n<questions>\n$questions\n</questions>\n\n"
    'Reply with only a JSON object: {"answers": [{"code": "<the question\'s code>", "value": '
    '"<the key in brackets of the answer you choose>", "explanation": "<why you answered this '
    'way, or \\"\\" where the question does not ask>"}]}, with one answer for every question.'
)
NOTES = (
    "Answer studies: the survey as participants see it, and nothing more: the question, the "
    "answer (or Answers A and B), each survey question's wording and answers, and the request "
    "for an explanation where the item asks for one; no system message, no persona; only the "
    "reply's JSON format is added, as in version 2."
)


def seed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.get_or_create(
        purpose="survey_proxy",
        version=3,
        defaults={"system_text": "", "user_text": USER_TEXT, "notes": NOTES},
    )


def unseed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.filter(
        purpose="survey_proxy", version=3, used_at__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("llm", "0012_batch_mode")]
    operations = [migrations.RunPython(seed, unseed)]
