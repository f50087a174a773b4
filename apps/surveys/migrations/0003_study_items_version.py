"""`Study.items_version`: changes whenever any of the study's items does, so that web processes
can keep a study's items in memory (selectors.study_items) and know when to read them again.

Kept by the database, not by Python: a trigger bumps it on every insert, update or delete of
an item, whatever does it (a service, the admin, a bulk update, SQL by hand), and the version
never goes back, even when a Study row read before the change is saved afterwards.
"""

from django.db import migrations, models

BUMP = """
CREATE FUNCTION surveys_items_version_bump() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.study_id IS NOT NULL THEN
        UPDATE surveys_study SET items_version = items_version + 1 WHERE id = OLD.study_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.study_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.study_id IS DISTINCT FROM OLD.study_id) THEN
        UPDATE surveys_study SET items_version = items_version + 1 WHERE id = NEW.study_id;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER surveys_items_version_bump
AFTER INSERT OR UPDATE OR DELETE ON surveys_surveyitem
FOR EACH ROW EXECUTE FUNCTION surveys_items_version_bump();

CREATE FUNCTION surveys_items_version_keep() RETURNS trigger AS $$
BEGIN
    NEW.items_version := GREATEST(NEW.items_version, OLD.items_version);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER surveys_items_version_keep
BEFORE UPDATE ON surveys_study
FOR EACH ROW EXECUTE FUNCTION surveys_items_version_keep();
"""

UNBUMP = """
DROP TRIGGER IF EXISTS surveys_items_version_keep ON surveys_study;
DROP FUNCTION IF EXISTS surveys_items_version_keep();
DROP TRIGGER IF EXISTS surveys_items_version_bump ON surveys_surveyitem;
DROP FUNCTION IF EXISTS surveys_items_version_bump();
"""


class Migration(migrations.Migration):
    dependencies = [("surveys", "0002_default_items")]
    operations = [
        migrations.AddField(
            model_name="study",
            name="items_version",
            field=models.PositiveIntegerField(
                default=1,
                editable=False,
                help_text="Kept by a database trigger: changes whenever the study's items do.",
            ),
        ),
        migrations.RunSQL(BUMP, UNBUMP),
    ]
