"""Cosine of embeddings, the researcher's choice beside the bank's TF-IDF cosine: jobs that
compute it with one embedding model, and its value (or failure) per question and model,
with the two vectors it came from. The TF-IDF cosine's description names it as Assay's
choice (the published study does not say how its cosine was computed)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0008_embeddings"),
        ("questions", "0006_need_labels"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="question",
            name="rewrite_cosine",
            field=models.FloatField(
                blank=True,
                help_text="Cosine similarity of the TF-IDF vectors of the rewrite and the original, fitted on the bank. The published study does not say how it computed its cosine: TF-IDF is Assay's choice (apps/questions/similarity.py).",
                null=True,
                verbose_name="rewrite cosine (TF-IDF)",
            ),
        ),
        migrations.CreateModel(
            name="EmbeddingCosineJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("finished", "Finished"),
                            ("superseded", "Replaced by a newer job"),
                        ],
                        default="queued",
                        max_length=10,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "model",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="llm.modelconfig",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="EmbeddingCosine",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Being computed"),
                            ("done", "Computed"),
                            ("failed", "Failed"),
                        ],
                        default="pending",
                        max_length=10,
                    ),
                ),
                ("cosine", models.FloatField(blank=True, null=True)),
                (
                    "error_kind",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("ok", "OK"),
                            ("rate_limited", "Rate limited (429)"),
                            ("server_error", "Server error (5xx)"),
                            ("timeout", "Timed out"),
                            ("connection_error", "Connection error"),
                            ("bad_request", "Bad request (400)"),
                            ("auth_error", "Authentication or permission error"),
                            ("invalid_output", "Answer failed validation"),
                            ("other", "Other error"),
                        ],
                        max_length=20,
                    ),
                ),
                ("error", models.TextField(blank=True)),
                ("computed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "model",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="llm.modelconfig",
                    ),
                ),
                (
                    "original_embedding",
                    models.ForeignKey(
                        blank=True,
                        help_text="The vector of the original post.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="llm.embedding",
                    ),
                ),
                (
                    "question",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="embedding_cosines",
                        to="questions.question",
                    ),
                ),
                (
                    "rewrite_embedding",
                    models.ForeignKey(
                        blank=True,
                        help_text="The vector of the approved text.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="llm.embedding",
                    ),
                ),
                (
                    "job",
                    models.ForeignKey(
                        help_text="The job that computed it last.",
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cosines",
                        to="questions.embeddingcosinejob",
                    ),
                ),
            ],
            options={
                "ordering": ["question", "model"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("question", "model"), name="embedding_cosine_once"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("cosine__isnull", False),
                                ("original_embedding__isnull", False),
                                ("rewrite_embedding__isnull", False),
                                ("status", "done"),
                            ),
                            models.Q(
                                models.Q(("status", "done"), _negated=True),
                                ("cosine__isnull", True),
                            ),
                            _connector="OR",
                        ),
                        name="embedding_cosine_only_when_done",
                    ),
                ],
            },
        ),
    ]
