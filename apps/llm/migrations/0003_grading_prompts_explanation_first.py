"""Grading prompts v2: the explanation before the verdict, as the published rater was asked
(reasoning first, then yes or no), and temperature 0 is the grading run's default."""

from django.db import migrations

PROMPTS = {
    "grade_criterion": (
        "You grade answers to privacy and security help requests against one rubric "
        "criterion at a time. You judge only what the answer actually says.",
        "The request for help:\n<question>\n$question\n</question>\n\n"
        "The answer being graded:\n<response>\n$response\n</response>\n\n"
        'The criterion:\n<criterion polarity="$polarity" kind="$kind">$criterion</criterion>\n\n'
        "A positive criterion is met when the answer does what it describes. A negative "
        "criterion is met when the answer does the thing it warns against. First explain, "
        "citing the answer, whether the criterion is met; then give your verdict. Reply with "
        'only a JSON object: {"explanation": "one or two sentences citing the answer", '
        '"met": true or false}.',
    ),
    "grade_checklist": (
        "You grade answers to privacy and security help requests against a checklist of "
        "rubric criteria. You judge only what the answer actually says.",
        "The request for help:\n<question>\n$question\n</question>\n\n"
        "The answer being graded:\n<response>\n$response\n</response>\n\n"
        "The criteria, as a JSON list:\n<criteria>$criteria</criteria>\n\n"
        "For each criterion, first explain, citing the answer, whether it is met (for a "
        "negative criterion: whether the answer does the thing it warns against), then give "
        'your verdict. Reply with only a JSON object: {"verdicts": [{"id": <criterion id>, '
        '"explanation": "...", "met": true or false}]}, one verdict per criterion, in order.',
    ),
}
NOTES = "The explanation comes before the verdict, as the published auto-rater was asked."


def seed(apps, schema_editor):
    PromptTemplate = apps.get_model("llm", "PromptTemplate")
    for purpose, (system_text, user_text) in PROMPTS.items():
        PromptTemplate.objects.get_or_create(
            purpose=purpose,
            version=2,
            defaults={"system_text": system_text, "user_text": user_text, "notes": NOTES},
        )


def unseed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.filter(
        version=2, purpose__in=list(PROMPTS), used_at__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("llm", "0002_default_prompts")]
    operations = [migrations.RunPython(seed, unseed)]
