"""Drawing samples from the pool: uniform, reproducible from the seed, never a post twice."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from apps.questions.errors import QuestionError
from apps.questions.models import Sample, SampledPost, Topic
from apps.questions.services import sample_draw, samples_draw
from tests.factories import posts_make

pytestmark = pytest.mark.django_db


def topic(name: str) -> Topic:
    return Topic.objects.get(name=name)


def drawn(sample: Sample) -> list[int]:
    return list(sample.posts.order_by("position").values_list("post_id", flat=True))


def undo(sample: Sample) -> None:
    """Put a sample's posts back into the pool (as if it had never been drawn)."""
    sample.delete()


def test_the_same_seed_over_the_same_pool_draws_the_same_posts_in_the_same_order():
    posts_make(200, topics=("scams",))
    first = sample_draw(topic=topic("scams"), size=30, seed=42)
    picked = drawn(first)
    undo(first)
    again = sample_draw(topic=topic("scams"), size=30, seed=42)
    assert drawn(again) == picked
    assert (again.seed, again.size, again.pool) == (42, 30, 200)


def test_another_seed_draws_other_posts():
    posts_make(200, topics=("scams",))
    first = sample_draw(topic=topic("scams"), size=30, seed=1)
    picked = set(drawn(first))
    undo(first)
    other = sample_draw(topic=topic("scams"), size=30, seed=2)
    assert set(drawn(other)) != picked


def test_the_same_seed_draws_the_same_posts_whatever_order_the_rows_were_stored_in():
    posts = posts_make(50, topics=("scams",))
    first = sample_draw(topic=topic("scams"), size=10, seed=7)
    picked = drawn(first)
    undo(first)
    # Rewrite the topic rows in reverse: the physical order changes, the pool does not.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM questions_sourceposttopic")
        cursor.executemany(
            "INSERT INTO questions_sourceposttopic (topic_id, post_id) VALUES (%s, %s)",
            [(topic("scams").pk, p.pk) for p in reversed(posts)],
        )
    assert drawn(sample_draw(topic=topic("scams"), size=10, seed=7)) == picked


def test_a_draw_without_a_seed_records_the_seed_it_drew_and_that_seed_repeats_it():
    posts_make(100, topics=("accounts",))
    first = sample_draw(topic=topic("accounts"), size=20)
    assert Sample.objects.get(pk=first.pk).seed == first.seed
    picked, seed = drawn(first), first.seed
    undo(first)
    assert drawn(sample_draw(topic=topic("accounts"), size=20, seed=seed)) == picked


def test_a_post_is_never_sampled_twice_across_draws_and_the_pool_shrinks():
    posts_make(60, topics=("accounts",))
    samples = [sample_draw(topic=topic("accounts"), size=25, seed=s) for s in (1, 1)]
    ids = drawn(samples[0]) + drawn(samples[1])
    assert len(ids) == len(set(ids)) == 50
    assert [s.pool for s in samples] == [60, 35]


def test_a_post_sampled_in_one_topic_is_not_sampled_again_in_another_it_is_labelled_with():
    both = posts_make(5, topics=("accounts", "scams"))
    sample_draw(topic=topic("accounts"), size=5, seed=3)
    with pytest.raises(QuestionError, match="No post labelled “scams” is left to sample"):
        sample_draw(topic=topic("scams"), size=5, seed=3)
    assert SampledPost.objects.filter(post__in=both).count() == 5


def test_only_posts_labelled_with_the_topic_are_drawn():
    scams = {p.pk for p in posts_make(10, topics=("scams",))}
    posts_make(40, topics=("harassment",))
    sample = sample_draw(topic=topic("scams"), size=100, seed=5)
    assert set(drawn(sample)) == scams
    assert sample.posts.filter(topic=topic("scams")).count() == 10


def test_a_size_larger_than_the_pool_draws_the_whole_pool_and_says_so():
    posts_make(7, topics=("compromise",))
    report = samples_draw(topics=[topic("compromise")], size=100, seed=9)
    (sample,) = report.samples
    assert (sample.size, sample.pool, sample.requested) == (7, 7, 100)
    assert sample.posts.count() == 7
    assert list(sample.posts.values_list("position", flat=True)) == list(range(1, 8))
    assert "compromise: 7 of 7 (all that were left)" in report.summary()


def test_the_default_size_is_one_hundred_with_positions_in_draw_order():
    posts_make(150, topics=("accounts",))
    sample = sample_draw(topic=topic("accounts"))
    assert sample.size == 100 and sample.posts.count() == 100
    assert sorted(sample.posts.values_list("position", flat=True)) == list(range(1, 101))


def test_an_empty_pool_and_a_bad_size_are_refused_with_a_message_and_nothing_is_stored():
    with pytest.raises(QuestionError, match="No post labelled “scams”"):
        sample_draw(topic=topic("scams"), size=10, seed=1)
    posts_make(3, topics=("scams",))
    for size in (0, -5, 10_001):
        with pytest.raises(QuestionError, match="A sample holds from 1 to 10,000 posts"):
            sample_draw(topic=topic("scams"), size=size, seed=1)
    assert Sample.objects.count() == 0 and SampledPost.objects.count() == 0


def test_drawing_every_topic_draws_those_with_posts_and_reports_the_others():
    posts_make(12, topics=("accounts",))
    posts_make(4, topics=("scams",))
    report = samples_draw(topics=list(Topic.objects.all()), size=10, seed=11)
    assert {s.topic.name: s.size for s in report.samples} == {"accounts": 10, "scams": 4}
    assert len(report.refused) == 7
    assert all(s.seed == 11 for s in report.samples)
    with pytest.raises(QuestionError, match="No post labelled"):
        samples_draw(topics=[topic("harassment")], size=10)


def test_uniformity_every_post_is_about_equally_likely_over_many_seeds():
    posts = posts_make(20, topics=("accounts",))
    hits = dict.fromkeys((p.pk for p in posts), 0)
    for seed in range(400):
        sample = sample_draw(topic=topic("accounts"), size=5, seed=seed)
        for post_id in drawn(sample):
            hits[post_id] += 1
        undo(sample)
    # 400 draws of 5 of 20: each post is expected 100 times (sd about 8.7); a sampler
    # biased to either end of the id order would fall far outside this band.
    assert min(hits.values()) > 65 and max(hits.values()) < 135, hits


@pytest.mark.django_db(transaction=True)
def test_concurrent_draws_of_overlapping_topics_never_sample_a_post_twice():
    posts_make(30, topics=("accounts", "scams"))

    def draw(name: str) -> int:
        try:
            return sample_draw(topic=Topic.objects.get(name=name), size=20).size
        except QuestionError:
            return 0
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        sizes = list(pool.map(draw, ["accounts", "scams", "accounts", "scams"]))
    ids = list(SampledPost.objects.values_list("post_id", flat=True))
    assert len(ids) == len(set(ids)) == 30 == sum(sizes)
