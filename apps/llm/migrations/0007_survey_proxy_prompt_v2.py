"""Survey-proxy prompt v2: the survey as participants see it, and nothing more.

The published study gave its proxy models the same survey its participants answered, with
each provider's default parameters. Version 2 has no system message and no persona: the
scenario, the response, and each question's wording and answers as the participant's page
shows them, with "Why did you answer this way?" where the item asks for an explanation; only
the reply's JSON format, which Assay reads the answers from, is added. Version 1 asked the
model to answer "as a thoughtful member of the public would" and gave the items as JSON; runs
made with it keep it, and their pages and the survey report say that it departs.

The text is copied here as it was made, so that this migration never changes: the product
recognises it (apps/surveys/selectors.py, PROXY_SURVEY_USER_TEXT), and a test holds the two
to the same words.
"""

from django.db import migrations

USER_TEXT = (
    "The scenario:\n<scenario>\n$scenario\n</scenario>\n\n"
    "The assistant's response:\n<response>\n$response\n</response>\n\n"
    "The questions:\n<questions>\n$questions\n</questions>\n\n"
    'Reply with only a JSON object: {"answers": [{"code": "<the question\'s code>", "value": '
    '"<the key in brackets of the answer you choose>", "explanation": "<why you answered this '
    'way, or \\"\\" where the question does not ask>"}]}, with one answer for every question.'
)
NOTES = (
    "The survey as participants see it, and nothing more: the scenario, the response, each "
    "question's wording and answers, and the request for an explanation where the item asks "
    "for one; no system message, no persona; only the reply's JSON format is added. As the "
    'published study asked its proxies. Version 1 added a persona ("a thoughtful member of the '
    'public") and gave the items as JSON.'
)


def seed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.get_or_create(
        purpose="survey_proxy",
        version=2,
        defaults={"system_text": "", "user_text": USER_TEXT, "notes": NOTES},
    )


def unseed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.filter(
        purpose="survey_proxy", version=2, used_at__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("llm", "0006_sample_prompt_question_alone")]
    operations = [migrations.RunPython(seed, unseed)]
