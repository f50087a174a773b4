"""The offline provider's rewrites for the rewrite prompt v2, over real HTTP: addressed to
an assistant, forum-only openers and repeats gone, platforms generalised, paraphrased, and
close to their own post in words and far from a copy of it."""

import csv
import statistics
import string
from importlib import import_module
from pathlib import Path

from apps.questions.similarity import tfidf_cosines, trigram_jaccard
from tests.offline_llm.test_provider import chat, content

PROMPT = import_module("apps.llm.migrations.0004_rewrite_prompt_v2")
POSTS = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"
POST = (
    "Throwaway for obvious reasons. My Instagram got hacked and the email was changed. I "
    "already tried resetting my password twice. I'm on an Android phone if that matters. "
    "It started about a week ago and it's getting worse. It started about a week ago and "
    "it's getting worse. What should I do?"
)


def rewrite(url: str, post: str, *, model: str = "offline-terse", seed: int = 1) -> str:
    user = string.Template(PROMPT.USER_TEXT).substitute(post=post)
    return content(chat(url, user, model=model, seed=seed, system=PROMPT.SYSTEM_TEXT))


def test_a_rewrite_drops_the_forum_opener_generalises_the_platform_and_asks_the_assistant(
    offline_provider_url,
):
    for model in ("offline-terse", "offline-friendly", "offline-thorough"):
        text = rewrite(offline_provider_url, POST, model=model)
        assert "Throwaway" not in text and "Instagram" not in text and "Android" not in text
        assert text.count("started") <= 1  # the repeated sentence said once
        assert "hacked" in text and "password" in text  # the situation and the attempt kept
        assert text.rstrip().endswith("?") and "What should I do?" not in text
        assert len(text) < len(POST)


def test_rewrites_differ_between_models_and_seeds_and_repeat_for_the_same_seed(
    offline_provider_url,
):
    texts = {
        (model, seed): rewrite(offline_provider_url, POST, model=model, seed=seed)
        for model in ("offline-terse", "offline-friendly")
        for seed in (1, 2, 3)
    }
    assert len(set(texts.values())) >= 5
    assert (
        rewrite(offline_provider_url, POST, model="offline-terse", seed=2)
        == texts[("offline-terse", 2)]
    )


def test_on_the_candidate_posts_a_rewrite_keeps_its_posts_words_without_copying_it(
    offline_provider_url,
):
    with POSTS.open(encoding="utf-8", newline="") as handle:
        posts = [row["body"] for row in csv.DictReader(handle) if len(row["body"]) < 1000][:60]
    for model in ("offline-terse", "offline-thorough"):
        rewrites = [
            rewrite(offline_provider_url, p, model=model, seed=i) for i, p in enumerate(posts)
        ]
        corpus = posts + rewrites
        own = statistics.mean(tfidf_cosines(list(zip(posts, rewrites, strict=True)), corpus=corpus))
        # Each rewrite against another post: what a rewrite that lost its post would score.
        shifted = list(zip(posts, rewrites[1:] + rewrites[:1], strict=True))
        other = statistics.mean(tfidf_cosines(shifted, corpus=corpus))
        overlap = statistics.mean(
            trigram_jaccard(a, b) for a, b in zip(posts, rewrites, strict=True)
        )
        assert own > other + 0.2, (model, own, other)  # it is about its own post
        assert own < 0.95 and overlap < 0.5, (model, own, overlap)  # and not a copy of it
