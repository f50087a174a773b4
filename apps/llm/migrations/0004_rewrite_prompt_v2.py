"""Rewrite prompt v2: the published instructions. The rewrite is addressed to an assistant
(the benchmark's questions are asked of one), keeps the intent and the question, and changes
or drops names, ages and platforms only where the question survives without them."""

from django.db import migrations

SYSTEM_TEXT = (
    "You rewrite posts from online help forums into questions that a person could ask an AI "
    "assistant, for a research benchmark of privacy, security and safety advice."
)
USER_TEXT = (
    "Rewrite the post below as a message its writer would send to an AI assistant.\n\n"
    "- Keep the writer's intent and their question: what happened, what they already tried, "
    "and what they want to know.\n"
    "- Address it to the assistant, in the writer's first person.\n"
    "- Change or drop names, ages and platforms (apps, sites, devices) where the question "
    "survives without them; keep them where the answer depends on them.\n"
    "- Drop what is only about the forum (greetings to its readers, throwaway accounts, "
    "apologies for the post) and say the rest in your own words.\n\n"
    "Reply with the rewrite only.\n\n"
    "<post>\n$post\n</post>"
)
NOTES = (
    "The published rewrite instructions. v1 asked for a paraphrase in the post's voice that "
    "dropped every identifying detail but kept platforms; v2 addresses the rewrite to an "
    "assistant, keeps the intent and the question, changes or drops names, ages and platforms "
    "only where the question survives without them, and drops what is only about the forum."
)


def seed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.get_or_create(
        purpose="rewrite",
        version=2,
        defaults={"system_text": SYSTEM_TEXT, "user_text": USER_TEXT, "notes": NOTES},
    )


def unseed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.filter(
        purpose="rewrite", version=2, used_at__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("llm", "0003_grading_prompts_explanation_first")]
    operations = [migrations.RunPython(seed, unseed)]
