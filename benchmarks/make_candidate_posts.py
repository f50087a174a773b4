#!/usr/bin/env python3
"""Write N synthetic candidate help posts, as CSV (default) or JSON Lines, to stdout.

They stand in for a pool of Reddit posts already labelled as privacy/security/safety
related (the real pool is millions of posts). Deterministic for a given --seed.

    .venv/bin/python benchmarks/make_candidate_posts.py 3000000 > posts.csv
    .venv/bin/python benchmarks/make_candidate_posts.py 1000 --format jsonl > posts.jsonl

benchmarks/import_posts.py imports what it writes; the demo's posts
(apps/demo/data/candidate-posts-300.csv) are its first 300 with the default seed.

Columns: external_id, subreddit, title, body, created_utc (ISO 8601), topics
(semicolon-separated topic names from the nine below). About 8% of bodies are longer
than 1,000 characters and some mention what the writer already tried.
"""

import argparse
import csv
import json
import random
import sys
from datetime import UTC, datetime, timedelta

TOPICS = [
    "accounts",
    "moderation tools",
    "security tools",
    "privacy tools",
    "compromise",
    "platform actions",
    "scams",
    "harassment",
    "data concerns",
]
SUBS = [
    "privacy",
    "cybersecurity_help",
    "Scams",
    "techsupport",
    "discordapp",
    "Instagram",
    "facebook",
    "legaladvice",
    "AskNetsec",
    "modhelp",
    "antivirus",
    "gmail",
]
OPENERS = [
    "So this happened yesterday.",
    "Not sure where else to ask.",
    "Throwaway for obvious reasons.",
    "Long time lurker, first post.",
    "Please help, I'm panicking a bit.",
    "Quick question.",
]
SITUATIONS = {
    "accounts": [
        "I can't log into my email after changing phones",
        "my 2FA codes stopped working",
        "the recovery form says it can't verify me",
        "I forgot which email my old account used",
    ],
    "moderation tools": [
        "trolls keep joining my server with new accounts",
        "our subreddit gets brigaded",
        "spam bots flood our group chat",
        "someone keeps evading bans",
    ],
    "security tools": [
        "I'm not sure I need antivirus",
        "my password manager flagged a reused password",
        "I want to encrypt my backup drive",
        "my firewall keeps asking about an app",
    ],
    "privacy tools": [
        "I want to stop apps tracking my location",
        "does a VPN hide my browsing",
        "which browser blocks trackers",
        "I want to remove my data from people-search sites",
    ],
    "compromise": [
        "my Instagram got hacked and the email was changed",
        "my webcam light turns on by itself",
        "someone logged into my bank from another country",
        "my friends got spam from my account",
    ],
    "platform actions": [
        "my account was suspended for no reason",
        "all my new accounts got frozen",
        "my appeal was rejected automatically",
        "a post of mine was removed as spam",
    ],
    "scams": [
        "I got a text about a customs fee",
        "a dating match wants me to invest in crypto",
        "someone asked me to buy gift cards for my boss",
        "a buyer sent me a fake payment email",
    ],
    "harassment": [
        "my ex keeps making new accounts to message me",
        "someone is posting my photos",
        "I'm getting threats after a post went viral",
        "an old classmate keeps tagging me",
    ],
    "data concerns": [
        "a company I never used mailed me",
        "my data was in a breach",
        "an app shared my contacts",
        "my employer wants access to my personal phone",
    ],
}
TRIED = [
    "I already tried resetting my password twice.",
    "I contacted support but got a bot reply.",
    "I blocked them but it didn't help.",
    "I ran a scan and it found nothing.",
    "I filled in the appeal form already.",
]
FILLER = [
    "It started about a week ago and it's getting worse.",
    "I'm on an Android phone if that matters.",
    "This account has years of photos I really don't want to lose.",
    "My partner thinks I'm overreacting but I'm worried.",
    "I use the same password on a few sites, which I know is bad.",
    "I don't have much money so paid tools aren't really an option.",
    "English isn't my first language, sorry.",
    "I read a few guides online but they contradict each other.",
    "Everything is up to date as far as I know.",
]
QUESTIONS = [
    "What should I do?",
    "Is this safe?",
    "Am I overthinking this?",
    "How do I fix this?",
    "Is there any way to get it back?",
    "What are my options?",
]


def post(rng: random.Random, i: int, start: datetime):
    topics = rng.sample(TOPICS, k=rng.choices([1, 2, 3], weights=[70, 25, 5])[0])
    main = topics[0]
    situation = rng.choice(SITUATIONS[main])
    parts = [rng.choice(OPENERS), situation[0].upper() + situation[1:] + "."]
    if rng.random() < 0.4:
        parts.append(rng.choice(TRIED))
    target = rng.choice(
        [
            rng.randint(60, 330),
            rng.randint(333, 665),
            rng.randint(666, 999),
            rng.randint(1000, 1800),
        ]
    )
    while sum(len(p) + 1 for p in parts) < target:
        parts.append(rng.choice(FILLER))
    parts.append(rng.choice(QUESTIONS))
    created = start + timedelta(seconds=rng.randint(0, 4 * 365 * 86400))
    return {
        "external_id": f"t3_{i:08x}",
        "subreddit": rng.choice(SUBS),
        "title": situation[:80],
        "body": " ".join(parts),
        "created_utc": created.isoformat(timespec="seconds"),
        "topics": ";".join(topics),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    start = datetime(2021, 1, 1, tzinfo=UTC)
    fields = ["external_id", "subreddit", "title", "body", "created_utc", "topics"]
    if a.format == "csv":
        w = csv.DictWriter(sys.stdout, fieldnames=fields)
        w.writeheader()
        for i in range(a.n):
            w.writerow(post(rng, i, start))
    else:
        for i in range(a.n):
            sys.stdout.write(json.dumps(post(rng, i, start)) + "\n")


if __name__ == "__main__":
    main()
