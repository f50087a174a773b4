"""Topics of the question bank: researchers add them and rename them."""

from django.db import transaction
from django.utils.text import slugify

from ..models import Topic


def topic_save(*, topic: Topic) -> Topic:
    """Save a topic. A new one gets a slug made from its name, kept when it is renamed
    (links and exports use it)."""
    with transaction.atomic():
        if topic.pk is None:
            base = slugify(topic.name)[:36] or "topic"
            slug, n = base, 1
            while Topic.objects.filter(slug=slug).exists():
                n += 1
                slug = f"{base}-{n}"
            topic.slug = slug
        topic.save()
    return topic
