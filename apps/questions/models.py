from django.conf import settings
from django.db import models


class Topic(models.Model):
    """One of the nine topics of the question bank (seeded by a migration)."""

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=60, unique=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self):
        return self.name


class NeedType(models.TextChoices):
    SENSEMAKING = "sensemaking", "Sensemaking"
    GUIDANCE = "guidance", "Guidance"


class LengthBucket(models.TextChoices):
    SHORT = "short", "Short (under 50 words)"
    MEDIUM = "medium", "Medium (50 to 149 words)"
    LONG = "long", "Long (150 words or more)"


def length_bucket_for(text: str) -> str:
    """The stratification bucket of a question's length, in words."""
    count = len(text.split())
    if count < 50:
        return LengthBucket.SHORT
    return LengthBucket.MEDIUM if count < 150 else LengthBucket.LONG


class Question(models.Model):
    """A help question in the bank: the final (rewritten) text that models answer."""

    external_id = models.CharField(
        "question id", max_length=100, unique=True, help_text="The id used in imports and exports."
    )
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="questions")
    text = models.TextField()
    original_text = models.TextField(blank=True, help_text="The post before rewriting, if any.")
    length_bucket = models.CharField(max_length=10, choices=LengthBucket.choices)
    mentions_prior_attempt = models.BooleanField(default=False)
    need_type = models.CharField(max_length=20, choices=NeedType.choices, blank=True)
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    rewrite_cosine = models.FloatField(
        null=True, blank=True, help_text="Cosine similarity of the rewrite to the original."
    )
    rewrite_trigram_overlap = models.FloatField(
        null=True, blank=True, help_text="Share of the original's word 3-grams kept."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic__order", "external_id"]

    def __str__(self):
        return self.external_id
