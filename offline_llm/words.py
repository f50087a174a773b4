"""The crude word handling every offline answer is built on.

Relevance and grading compare *stems*: lowercased words with stopwords dropped, a plural
"s", an "-ing" or "-ed" and a final "e" removed, and the rest cut to five letters.
"passwords" and "password" meet at "passw", "phishing" and "phish" at "phish", "share",
"shared" and "sharing" at "shar". It is wrong often enough to be obviously a heuristic
and right often enough that answers track their input.
"""

import re

# Hyphens split words so that "two-factor" meets "two factor".
WORD = re.compile(r"[a-z0-9][a-z0-9'\u2019]*", re.IGNORECASE)
CURLY_APOSTROPHE = "\u2019"
STEM_LENGTH = 5


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of a word list written as one string."""
    return frozenset(text.split())


STOPWORDS = word_set(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each even ever every few for from further get
    gets getting got had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
    it's its itself just let's like make makes me more most much must mustn't my myself no
    nor not now of off on once one only or other ought our ours ourselves out over own
    really same say says shan't she she'd she'll she's should shouldn't so some something
    still such than that that's the their theirs them themselves then there there's these
    they they'd they'll they're they've thing things this those through to too under until
    up upon us use used uses using very want wants was wasn't way we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's
    will with won't would wouldn't yet you you'd you'll you're you've your yours yourself
    yourselves response answer user person people someone somebody anyone able may might
    need needs know lot lots well already back sure okay ok etc e.g i.e via per
    """
)


def stem(word: str) -> str:
    word = word.lower().replace(CURLY_APOSTROPHE, "'").strip("'")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) >= 7 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) >= 6 and word.endswith("ed"):
        word = word[:-2]
    if len(word) >= 5 and word.endswith("e"):
        word = word[:-1]
    return word[:STEM_LENGTH]


def words(text: str) -> list[str]:
    return WORD.findall(text)


# Abbreviations that help text uses as often as the words they stand for.
ALIASES = {"2fa": ("two", "factor"), "mfa": ("multi", "factor"), "wifi": ("wi", "fi")}


def content_words(text: str) -> list[str]:
    """The words that carry meaning, in order, lowercased, without stopwords."""
    found = []
    for word in WORD.findall(text):
        lowered = word.lower().replace(CURLY_APOSTROPHE, "'").strip("'")
        if lowered in ALIASES:
            found.extend(ALIASES[lowered])
        elif lowered and lowered not in STOPWORDS and not lowered.isdigit():
            found.append(lowered)
    return found


def stems(text: str) -> frozenset[str]:
    return frozenset(stem(word) for word in content_words(text))
