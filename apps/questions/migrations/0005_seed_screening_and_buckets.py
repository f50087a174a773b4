from django.db import migrations

# The exclusion reasons of the published screening (HelpBench), in its order; researchers
# may add, rename or retire reasons in the console.
REASONS = [
    "No clear question",
    "Only relationship or therapeutic support",
    "Outdated technology",
    "Asks for inappropriate help",
    "Only asks others to report",
    "Needs several turns",
    "Needs images or other non-text content",
    "Not English",
    "Longer than 1,000 characters",
]


def _bucket(text: str) -> str:  # models.length_bucket_for, as of this migration
    count = len(text)
    if count < 333:
        return "short"
    if count < 666:
        return "medium"
    return "long" if count < 1000 else "over"


def seed(apps, schema_editor):
    ExclusionReason = apps.get_model("questions", "ExclusionReason")
    for order, text in enumerate(REASONS, start=1):
        ExclusionReason.objects.update_or_create(text=text, defaults={"order": order})
    apps.get_model("questions", "QuotaSettings").objects.get_or_create(pk=1)
    # Buckets were counted in words before; the published strata count characters. A
    # question imported with its labels carries them from its file: verified there.
    Question = apps.get_model("questions", "Question")
    for question in Question.objects.all():
        question.length_bucket = _bucket(question.text)
        question.label_status = "verified" if question.need_type else "unlabelled"
        question.save(update_fields=["length_bucket", "label_status"])


class Migration(migrations.Migration):
    dependencies = [("questions", "0004_candidate_pool_screening_rewriting")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
