"""Embeddings: a model config says what it serves (chat completions or embeddings), the
ledger records embedding calls, and vectors are kept by model and text (Embedding)."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0007_survey_proxy_prompt_v2"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelconfig",
            name="kind",
            field=models.CharField(
                choices=[("chat", "Chat completions"), ("embedding", "Embeddings")],
                default="chat",
                help_text="Chat completions (answers, grades, rewrites) or embeddings (vectors of texts, e.g. openai/text-embedding-3-small).",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="llmcall",
            name="purpose",
            field=models.CharField(
                choices=[
                    ("sample", "Sample an answer"),
                    ("grade_criterion", "Grade one criterion"),
                    ("grade_checklist", "Grade a checklist"),
                    ("rewrite", "Rewrite a post"),
                    ("rubric_draft", "Draft rubric criteria"),
                    ("scenario_response", "Respond to a scenario"),
                    ("survey_proxy", "Answer a survey as a proxy"),
                    ("embedding", "Embed texts"),
                ],
                max_length=32,
            ),
        ),
        migrations.CreateModel(
            name="Embedding",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "litellm_model",
                    models.CharField(help_text="The model string that made it.", max_length=200),
                ),
                ("text_sha256", models.CharField(max_length=64)),
                ("dimensions", models.PositiveIntegerField()),
                (
                    "vector",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.FloatField(), size=None
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "model",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="embeddings",
                        to="llm.modelconfig",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("model", "litellm_model", "text_sha256"), name="embedding_once"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("dimensions__gt", 0)), name="embedding_has_dimensions"
                    ),
                ],
            },
        ),
    ]
