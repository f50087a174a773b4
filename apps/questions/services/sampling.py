"""Drawing samples from the candidate pool: per topic, uniformly at random from the posts
labelled with it and never sampled before, reproducible from a seed over the same pool."""

import random
import secrets
from dataclasses import dataclass, field

from django.db import connection, transaction

from ..errors import QuestionError
from ..models import Sample, SampledPost, SourcePostTopic, Topic

MAX_SIZE = 10_000
# pg_advisory_xact_lock(namespace, key): the namespace keeps our keys apart from other
# advisory locks of the project.
LOCK_NAMESPACE = 11_03
# Every draw takes the same key, not one per topic: a post labelled with two topics is
# eligible in both, and two concurrent draws of those topics could otherwise pick it twice
# (SampledPost.post is unique, so the second would fail). A draw takes a fraction of a
# second, so serialising them all costs nothing a researcher notices.
LOCK_KEY = 1

_TOPIC_TABLE = SourcePostTopic._meta.db_table
_SAMPLED_TABLE = SampledPost._meta.db_table

# Table names are the models' own (no input reaches these strings).
# A topic's posts, read from the narrow (topic, post) rows by their unique index, as one
# array: a 450,000-post topic arrives in a tenth of a second, where ranking the rows in SQL
# (a window over them all) sorts them on disk. Sorted here, not by the query: cheaper.
_TOPIC_POSTS = f"SELECT array_agg(post_id) FROM {_TOPIC_TABLE} WHERE topic_id = %s"  # noqa: S608
# The posts of the topic sampled already (in any topic's sample): a few thousand at most.
_TOPIC_SAMPLED = (
    f"SELECT s.post_id FROM {_SAMPLED_TABLE} s "  # noqa: S608
    f"JOIN {_TOPIC_TABLE} t ON t.post_id = s.post_id AND t.topic_id = %s"
)


def seed_new() -> int:
    """A seed for a draw that was given none (recorded with it, so it can be repeated)."""
    return secrets.randbelow(2**31)


def _eligible(topic_id: int) -> list[int]:
    """The ids of the topic's posts never sampled, in id order: a post's rank is its place
    here, so that the same seed over the same pool picks the same posts whatever order the
    rows are stored in."""
    with connection.cursor() as cursor:
        cursor.execute(_TOPIC_POSTS, [topic_id])
        ids = sorted(cursor.fetchone()[0] or [])
        cursor.execute(_TOPIC_SAMPLED, [topic_id])
        sampled = {row[0] for row in cursor.fetchall()}
    return [i for i in ids if i not in sampled] if sampled else ids


def sample_draw(*, topic: Topic, size: int = 100, seed: int | None = None, user=None) -> Sample:
    """Draw `size` posts of `topic` that were never sampled, uniformly at random with
    `seed` (a random one, recorded, when None). With fewer eligible posts than `size`, all
    of them are drawn: the sample's `size` is what it holds, `requested` what was asked,
    and `pool` how many were eligible."""
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_SIZE:
        raise QuestionError(f"A sample holds from 1 to {MAX_SIZE:,} posts; {size!r} is not that.")
    if seed is None:
        seed = seed_new()
    elif not -(2**63) <= seed < 2**63:
        raise QuestionError("The seed must be a whole number of at most 18 digits.")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, LOCK_KEY])
        eligible = _eligible(topic.pk)
        pool = len(eligible)
        if pool == 0:
            raise QuestionError(
                f"No post labelled “{topic}” is left to sample: every one has been sampled "
                "already, or none was imported."
            )
        ranks = random.Random(seed).sample(range(pool), min(size, pool))
        sample = Sample.objects.create(
            topic=topic, size=len(ranks), seed=seed, pool=pool, drawn_by=user
        )
        SampledPost.objects.bulk_create(
            SampledPost(sample=sample, post_id=eligible[rank], topic=topic, position=position)
            for position, rank in enumerate(ranks, start=1)
        )
    sample.requested = size
    return sample


@dataclass
class DrawReport:
    """What a draw over several topics made, and the topics it could not draw from."""

    samples: list[Sample] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{s.topic}: {s.size} of {s.pool:,}"
            + (" (all that were left)" if s.size < s.requested else "")
            for s in self.samples
        ]
        text = f"Drew {len(self.samples)} sample(s): " + "; ".join(parts) + "." if parts else ""
        if self.refused:
            text += (" " if text else "") + " ".join(self.refused)
        return text


def samples_draw(
    *, topics: list[Topic], size: int = 100, seed: int | None = None, user=None
) -> DrawReport:
    """One sample per topic, each in its own transaction: a topic with nothing left to draw
    is reported, and the others are drawn (nothing drawn at all is an error). A given seed
    is used for every topic's draw, so that each can be repeated on its own with it."""
    report = DrawReport()
    for topic in topics:
        try:
            report.samples.append(sample_draw(topic=topic, size=size, seed=seed, user=user))
        except QuestionError as exc:
            report.refused.append(str(exc))
    if not report.samples:
        raise QuestionError(" ".join(dict.fromkeys(report.refused)) or "Choose a topic.")
    return report
