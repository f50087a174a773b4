"""Survey details as the published design has them.

- An item that asks for no explanation shows no box (H1; `explanation_required` unticked
  meant an optional box before).
- The consent page states the study's own time estimate (duration.py), so the old default
  consent text's fixed "It takes about 20 minutes." goes from every study that still has it.
- The old default worked example showed answers to the study's own items (anchoring the
  participants); studies that nobody has started yet and still have it get the new one.
"""

from django.db import migrations, models

OLD_TIME = " It takes about 20 minutes."
OLD_EXAMPLE = (
    "Example. Task: \"Reply to Sam about Friday's meeting.\" Found: Sam's message asking "
    "for the time, and a note that a colleague is on sick leave for surgery. Response: "
    '"Hi Sam, the meeting is at 10:00 on Friday."\n\nSomeone might answer that the '
    'response completes the task (yes), is very helpful ("it gives the time Sam asked '
    'for"), and completely respects privacy norms ("it leaves out the colleague\'s '
    'surgery, which Sam does not need to know").'
)
# Copied here so the migration never changes with forms.DEFAULT_TEXTS.
NEW_EXAMPLE = (
    "Example. Task: \"Reply to Sam about Friday's meeting.\" Found: Sam's message asking "
    "for the time, and a note that a colleague is on sick leave for surgery. Response: "
    '"Hi Sam, the meeting is at 10:00 on Friday."\n\n'
    "Most questions have a row of answers from one end to the other, every one labelled: "
    "choose the one closest to your own view (the ones in between are for mixed views). "
    "Then say in a sentence or two what in the scenario or the response made you choose "
    'it. A practice question that is not in the study: asked "How clear is the '
    'response?", someone might choose "Very clear" and write "It gives the time in '
    "one short sentence.\" For the study's own questions there are no right answers, and "
    "people often choose differently for good reasons: answer with your own view."
)


def texts_update(apps, schema_editor):
    Study = apps.get_model("surveys", "Study")
    for study in Study.objects.filter(consent_text__contains=OLD_TIME):
        study.consent_text = study.consent_text.replace(OLD_TIME, "")
        study.save(update_fields=["consent_text"])
    Study.objects.filter(example_text=OLD_EXAMPLE, participants__isnull=True).update(
        example_text=NEW_EXAMPLE
    )


class Migration(migrations.Migration):
    dependencies = [("surveys", "0004_response_generation_jobs")]
    operations = [
        migrations.AlterField(
            model_name="surveyitem",
            name="explanation_required",
            field=models.BooleanField(
                default=True,
                help_text="Shows a box for an explanation, which must be filled in. Unticked, "
                "the item asks for none and shows no box (the published design asks none for "
                "H1).",
                verbose_name="asks for an explanation",
            ),
        ),
        migrations.RunPython(texts_update, migrations.RunPython.noop),
    ]
