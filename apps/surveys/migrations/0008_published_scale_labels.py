"""The published scale labels, and the published groups of items.

- H3 asks how likely the participant would be to use the response, on the labels the
  published study quotes ("Extremely unlikely" ... "Extremely likely"); the question's words
  stay ours. The default set (`study` empty) and studies that nobody has answered yet get them,
  where they still have the old ones; a study with answers keeps what its participants saw.
- `SurveyItem.group`: what an item measures, as the published study grouped its items
  (helpfulness: H1-H3, privacy: P1-P4), so that the report's rho per group no longer reads
  the group from the first letter of a code. The published items get their group everywhere:
  it is the analysis's label, not anything a participant saw.
"""

from django.db import migrations, models
from django.db.models import Q

OLD_WORDING = "If you were the person in this scenario, would you use this response as it is?"
OLD_LABELS = ["Definitely not", "Probably not", "Not sure", "Probably yes", "Definitely yes"]
WORDING = (
    "If you were the person in this scenario, how likely would you be to use this response "
    "as it is?"
)
LABELS = [
    "Extremely unlikely",
    "Somewhat unlikely",
    "Neither likely nor unlikely",
    "Somewhat likely",
    "Extremely likely",
]
GROUPS = {
    "H1": "helpfulness",
    "H2": "helpfulness",
    "H3": "helpfulness",
    "P1": "privacy",
    "P2": "privacy",
    "P3": "privacy",
    "P4": "privacy",
}


def _unanswered(apps):
    """The default set and the items of studies nobody has answered."""
    SurveyItem = apps.get_model("surveys", "SurveyItem")
    Answer = apps.get_model("surveys", "Answer")
    answered = Answer.objects.filter(item__study__isnull=False).values("item__study_id")
    return SurveyItem.objects.filter(Q(study__isnull=True) | ~Q(study_id__in=answered))


def items_update(apps, schema_editor):
    SurveyItem = apps.get_model("surveys", "SurveyItem")
    for code, group in GROUPS.items():
        SurveyItem.objects.filter(code=code, attention_check=False, group="").update(group=group)
    h3 = _unanswered(apps).filter(code="H3", attention_check=False)
    h3.filter(scale_labels=OLD_LABELS).update(scale_labels=LABELS)
    h3.filter(wording=OLD_WORDING).update(wording=WORDING)


def items_restore(apps, schema_editor):
    h3 = _unanswered(apps).filter(code="H3", attention_check=False)
    h3.filter(scale_labels=LABELS).update(scale_labels=OLD_LABELS)
    h3.filter(wording=WORDING).update(wording=OLD_WORDING)


class Migration(migrations.Migration):
    dependencies = [("surveys", "0007_proxy_runs")]
    operations = [
        migrations.AddField(
            model_name="surveyitem",
            name="group",
            field=models.CharField(
                blank=True,
                choices=[("helpfulness", "Helpfulness"), ("privacy", "Privacy")],
                help_text="What the item measures, as the published study grouped its items "
                "(helpfulness, privacy); the survey report's rho per group takes the group's "
                "scale items. Empty: in no group.",
                max_length=16,
            ),
        ),
        migrations.RunPython(items_update, items_restore),
    ]
