from django.db import migrations, models
from django.db.migrations.exceptions import IrreversibleError
from django.db.models import Q

# The published benchmark (HelpBench) labels each question for two needs, independently:
# sensemaking (understanding what happened or what something means) and guidance (what to
# do). The single choice between them becomes two yes/no labels: "sensemaking" is
# sensemaking yes, guidance no; "guidance" the other way round; blank is both no (an
# unlabelled question stays unlabelled: its label status is not touched).
SENSEMAKING_HELP = "Asks for help understanding what happened or what something means."
GUIDANCE_HELP = "Asks what to do."
NEED_TYPE_CHOICES = [("sensemaking", "Sensemaking"), ("guidance", "Guidance")]
LABELLED = ("Question", "QuestionLabel")


def labels_forward(apps, schema_editor):
    for name in LABELLED:
        rows = apps.get_model("questions", name).objects
        rows.filter(need_type="sensemaking").update(needs_sensemaking=True, needs_guidance=False)
        rows.filter(need_type="guidance").update(needs_sensemaking=False, needs_guidance=True)
        rows.exclude(need_type__in=["sensemaking", "guidance"]).update(
            needs_sensemaking=False, needs_guidance=False
        )


def labels_backward(apps, schema_editor):
    """Back to the single choice, where it can say what the two labels say: one need, or
    (an unlabelled question) none. Both needs, or a given label of neither, cannot be said
    in it: going back is refused rather than dropping a label."""
    Question = apps.get_model("questions", "Question")
    QuestionLabel = apps.get_model("questions", "QuestionLabel")
    both = Q(needs_sensemaking=True, needs_guidance=True)
    neither = Q(needs_sensemaking=False, needs_guidance=False)
    questions = Question.objects.filter(both | (neither & ~Q(label_status="unlabelled")))
    labels = QuestionLabel.objects.filter(both | neither)
    if questions.exists() or labels.exists():
        raise IrreversibleError(
            f"{questions.count()} question(s) and {labels.count()} given label(s) say both "
            "needs or neither, which the single need type cannot hold; relabel them before "
            "migrating back."
        )
    for rows in (Question.objects, QuestionLabel.objects):
        rows.filter(needs_sensemaking=True).update(need_type="sensemaking")
        rows.filter(needs_guidance=True).update(need_type="guidance")
        rows.filter(neither).update(need_type="")


class Migration(migrations.Migration):
    dependencies = [("questions", "0005_seed_screening_and_buckets")]

    operations = [
        migrations.AddField(
            model_name="question",
            name="needs_sensemaking",
            field=models.BooleanField(default=False, help_text=SENSEMAKING_HELP),
        ),
        migrations.AddField(
            model_name="question",
            name="needs_guidance",
            field=models.BooleanField(default=False, help_text=GUIDANCE_HELP),
        ),
        migrations.AddField(
            model_name="questionlabel",
            name="needs_sensemaking",
            field=models.BooleanField(default=False, help_text=SENSEMAKING_HELP),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="questionlabel",
            name="needs_guidance",
            field=models.BooleanField(default=False, help_text=GUIDANCE_HELP),
            preserve_default=False,
        ),
        migrations.RunPython(labels_forward, labels_backward),
        # Blank allowed for the way back only: re-adding the column fills existing rows with
        # "" before labels_backward writes each row's value.
        migrations.AlterField(
            model_name="questionlabel",
            name="need_type",
            field=models.CharField(blank=True, choices=NEED_TYPE_CHOICES, max_length=20),
        ),
        migrations.RemoveField(model_name="question", name="need_type"),
        migrations.RemoveField(model_name="questionlabel", name="need_type"),
    ]
