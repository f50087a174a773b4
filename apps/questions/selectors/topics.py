"""Reads of the bank's topics."""

from django.db.models import Count, Exists, OuterRef, QuerySet

from ..models import SourcePostTopic, Topic


def topic_in_use(*, topic: Topic) -> bool:
    """Whether posts, questions or samples use the topic: then it is never deleted."""
    return (
        SourcePostTopic.objects.filter(topic=topic).exists()
        or topic.questions.exists()
        or topic.samples.exists()
    )


def topics_listed() -> QuerySet[Topic]:
    """Every topic with its number of questions, and whether any candidate post has it (an
    existence test: the pool's topic rows are millions)."""
    return Topic.objects.annotate(
        question_count=Count("questions", distinct=True),
        has_posts=Exists(SourcePostTopic.objects.filter(topic=OuterRef("pk"))),
    )
