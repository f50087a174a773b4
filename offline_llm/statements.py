"""Statements: what an offline answer is made of, and what the offline grader looks for.

A criterion's statement is its own wording turned from a description of an answer into a
sentence of one ("Suggests raising the server's verification level ..." -> "I'd suggest
raising the server's verification level ..."), so an answer that holds it addresses the
criterion, or for a negative criterion does what the criterion warns against. Presentation
comes from small banks of sentences (a preamble, a tangent, a flippant remark, an order, a
promise of complete safety) that an answer either holds or not. The grader finds a
criterion's statement as the answer's sentence that shares most of the criterion's key terms,
finds presentation by the banks' sentences, and says what it found in a sentence.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .banks import CRITERION_FILLER, FRIENDLY_OPENERS, THOROUGH_OPENERS
from .words import content_words, stem, stems, word_set

# --- presentation -----------------------------------------------------------------------

PREAMBLES = (
    "Situations like this come up more often than people think, and there is a lot that "
    "could be said about them.",
    "Before getting to what you can do, it helps to know how these things usually unfold.",
    "There are many angles to this, so some background first.",
    "This is a common kind of problem, and it has been around for as long as the internet.",
)
TANGENTS = (
    "While you're at it, this is a good time to tidy up old browser extensions you no longer use.",
    "Separately, it's worth reviewing which apps on your phone can see your location.",
    "As a general habit, back up your photos to a second place every few months.",
    "If you have time, look at the privacy settings of your smart TV as well.",
)
FLIPPANT = (
    "Honestly, this is a rookie mistake, but whatever.",
    "Not gonna lie, this one is kind of on you.",
    "Don't overthink it, it's not rocket science.",
    "Lol, welcome to the internet.",
)
ORDERS = (
    "Do all of this right now and don't argue with it.",
    "Stop everything else and follow these steps exactly as written.",
    "No excuses: get every one of these done today.",
)
OVERSTATEMENTS = (
    "Do this and you'll be completely safe from now on.",
    "That alone guarantees nobody can ever get in again.",
    "This fixes the problem for good, 100%.",
)
BANKS = {
    "lead": PREAMBLES,
    "focus": TANGENTS,
    "unprofessional": FLIPPANT,
    "imperative": ORDERS,
    "overstate": OVERSTATEMENTS,
}
# Feature -> the stems of a criterion that asks about it, checked in this order (before the
# older features: structure, brevity, empathy, clarity).
FEATURE_STEMS = (
    ("overstate", stems("overstates overstate exaggerates exaggerate overpromises overclaims")),
    ("imperative", stems("imperative commanding bossy dictates")),
    ("unprofessional", stems("unprofessional professional flippant rude sarcastic manner")),
    ("focus", stems("beyond tangent tangents digress digresses scope")),
    ("lead", stems("important first early upfront")),
)
# A criterion describes the fault (met when the answer has it) unless its wording is the
# virtue: "keeps to", "opens with", "professional" without "un".
VIRTUES = {"lead", "focus"}
NEGATIONS = frozenset({"avoid", "avoids", "without", "never", "not", "no", "free"})


def _normalised(sentence: str) -> str:
    return " ".join(sentence.lower().split())


_BANK_INDEX = {_normalised(s): feature for feature, bank in BANKS.items() for s in bank}
_OPENERS = frozenset(_normalised(s) for s in (*THOROUGH_OPENERS, *FRIENDLY_OPENERS))


def presentation_feature(criterion: str) -> str | None:
    criterion_stems = stems(criterion)
    for feature, feature_stems in FEATURE_STEMS:
        if criterion_stems & feature_stems:
            return feature
    return None


def describes_fault(feature: str, criterion: str) -> bool:
    """Whether the criterion describes the fault (met when the answer has the bank's
    sentence) rather than the virtue ("Avoids overstating", "The tone is professional")."""
    if feature in VIRTUES:
        return False
    lowered = {word.lower() for word in re.findall(r"[A-Za-z']+", criterion)}
    fault = feature != "unprofessional" or any(
        word.startswith(("unprofessional", "flippant", "rude", "sarcastic")) for word in lowered
    )
    return fault != bool(NEGATIONS & lowered)


# --- sentences ----------------------------------------------------------------------------

_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def sentences(text: str) -> list[str]:
    """The answer's sentences, in order, list markers dropped."""
    found = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        found.extend(piece.strip() for piece in _SENTENCE_END.split(line) if piece.strip())
    return found


def bank_sentences(text: str) -> dict[str, list[str]]:
    """feature -> the answer's sentences from that feature's bank, in order."""
    found: dict[str, list[str]] = {}
    for sentence in sentences(text):
        feature = _BANK_INDEX.get(_normalised(sentence))
        if feature:
            found.setdefault(feature, []).append(sentence)
    return found


def first_advice(text: str) -> str | None:
    """The answer's first sentence that is neither an opener nor from a bank."""
    for sentence in sentences(text):
        key = _normalised(sentence)
        if key not in _OPENERS and key not in _BANK_INDEX and not sentence.endswith(":"):
            return sentence
    return None


# --- a criterion's statement ----------------------------------------------------------------

_VERB_LED = re.compile(r"^(?P<verb>[A-Z][a-z]+(?:s))\b(?P<that>\s+that)?\s+(?P<rest>.+)$", re.S)
_INNER_VERB = re.compile(
    r"\b(and|then|or) (suggests|recommends|explains|notes|mentions|advises|says|warns|"
    r"encourages|points out)\b"
)
_SUGGESTING = frozenset({"suggests", "recommends", "advises", "encourages", "urges", "proposes"})
# Capitalised words that keep their capital inside a sentence.
_PROPER = word_set(
    "I Windows Instagram Reddit Meta Google Apple Microsoft Android Discord Facebook Gmail "
    "Outlook Signal WhatsApp TikTok Twitter Amazon PayPal Venmo Zelle Find FBI FTC GDPR CCPA"
)


def base_verb(verb: str) -> str:
    """'Suggests' -> 'suggest', 'Identifies' -> 'identify', 'Dismisses' -> 'dismiss'."""
    verb = verb.lower()
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("sses", "shes", "ches", "xes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") else verb


def _second_person(text: str) -> str:
    """The criterion's "the user" as the answer says it: "you"."""
    for pattern, said in (
        (r"\bthe user's\b", "your"),
        (r"\bthe user is\b", "you are"),
        (r"\bthe user has\b", "you have"),
        (r"\bthe user (\w+?)s\b", r"you \1"),
        (r"\bthe user\b", "you"),
    ):
        text = re.sub(pattern, said, text)
    return text


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lowered(text: str) -> str:
    """The text with its first word lowercased, unless that word is a name or acronym."""
    first = text.split(maxsplit=1)[0].split("'")[0].strip(",:;") if text.strip() else ""
    if not first or first in _PROPER or any(c.isupper() for c in first[1:]):
        return text
    return text[:1].lower() + text[1:]


def _with_stop(text: str) -> str:
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _inner(text: str, *, after_i: bool) -> str:
    # "... and suggests securing ..." -> "... and I'd suggest securing ..." (or "and suggest"
    # where the sentence already speaks as "I'd").
    return _INNER_VERB.sub(
        lambda m: (
            f"{m.group(1)} {'' if after_i else 'I would '}{base_verb(m.group(2).split()[0])}"
            + (" out" if m.group(2) == "points out" else "")
        ),
        text,
    )


def statement_options(criterion: str) -> tuple[str, ...]:
    """The ways an answer says what `criterion` describes; each holds its key terms."""
    text = _second_person(criterion.strip().rstrip("."))
    found = _VERB_LED.match(text)
    if found is None:
        # "If someone ..., suggests safety planning": the verb is inside.
        spoken = re.sub(
            r"(,\s*)(suggests|recommends|advises|explains|notes|mentions)\b",
            lambda m: f"{m.group(1)}I'd {base_verb(m.group(2))}",
            text,
            count=1,
        )
        return (_with_stop(_capitalised(_inner(spoken, after_i=True))),)
    verb, rest = found.group("verb").lower(), found.group("rest")
    if found.group("that"):
        said = _inner(rest, after_i=False)
        return (
            _with_stop(_capitalised(said)),
            _with_stop(f"Keep in mind that {_lowered(said)}"),
            _with_stop(f"It helps to know that {_lowered(said)}"),
        )
    rest_i = _inner(rest, after_i=True)
    if verb in _SUGGESTING:
        options = [f"I'd {base_verb(verb)} {rest_i}"]
        if not rest.startswith(("against", "that", "you", "not ")):
            options.append(f"Consider {rest_i}")
        return tuple(_with_stop(option) for option in options)
    if verb == "mentions":
        return (
            _with_stop(f"It's worth mentioning {rest_i}"),
            _with_stop(f"Also worth knowing about: {rest_i}"),
        )
    if verb == "warns" and rest.startswith("about "):
        return (
            _with_stop(f"Watch out for {rest_i[6:]}"),
            _with_stop(f"Be careful about {rest_i[6:]}"),
        )
    if verb == "explains":
        about = "know about" if rest.split(maxsplit=1)[0].endswith("ing") else "understand"
        return (_with_stop(f"It helps to {about} {rest_i}"),)
    if verb == "presents" and " as " in rest:
        return (_with_stop(f"Think of {rest_i}"),)
    return (_with_stop(f"I'd {base_verb(verb)} {rest_i}"),)


# --- the grader's reading -----------------------------------------------------------------


def key_terms(criterion: str) -> dict[str, str]:
    """stem -> the criterion's own word for it, in the criterion's order."""
    terms: dict[str, str] = {}
    for word in content_words(criterion):
        key = stem(word)
        if key not in CRITERION_FILLER and key not in terms:
            terms[key] = word
    return terms


@dataclass(frozen=True)
class Found:
    """The answer's sentence closest to a criterion, and the share of its key terms it has."""

    sentence: str
    share: float


def closest(criterion_terms: dict[str, str], answer_sentences: Sequence[str]) -> Found:
    best = Found("", 0.0)
    if not criterion_terms:
        return best
    for sentence in answer_sentences:
        share = len(stems(sentence) & criterion_terms.keys()) / len(criterion_terms)
        if share > best.share:
            best = Found(sentence, share)
    return best


def quoted(sentence: str, limit: int = 90) -> str:
    sentence = sentence.rstrip(".")
    if len(sentence) > limit:
        sentence = sentence[: limit - 1].rsplit(" ", 1)[0] + "…"
    return f"“{sentence}”"


_REPORTED = tuple(
    (re.compile(pattern, re.S), said)
    for pattern, said in (
        (r"^I'd (\w+) (.*)$", "{verb} {1}"),
        (r"^I would (\w+) (.*)$", "{verb} {1}"),
        (r"^Consider (.*)$", "suggests {0}"),
        (r"^(?:Watch out for|Be careful about) (.*)$", "warns about {0}"),
        (r"^Think of (.*)$", "presents {0}"),
        (r"^(?:It's worth mentioning|Also worth knowing about:) (.*)$", "mentions {0}"),
        (
            r"^(?:Keep in mind that|It helps to know that|Be aware that) (.*)$",
            "points out that {0}",
        ),
        (r"^It helps to (?:understand|know about) (.*)$", "explains {0}"),
    )
)
_IMPERATIVE_STARTS = word_set(
    "add ask avoid back block call change check choose clear contact create delete disable "
    "download enable file freeze go install keep leave limit lock log look make move note "
    "open pay put read record remove report reset restrict review revoke run save scan "
    "screenshot secure see send set sign start stop switch take talk tell treat try turn "
    "update use write"
)


_INNER_BASE = re.compile(
    r"\b(and|then|or) (explain|note|suggest|warn|recommend|mention|advise|say)\b(?! that I)"
)


_INNER_I = re.compile(r"\bI(?:'d| would) (\w+)")


def _third_person(verb: str) -> str:
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "sh", "ch", "x")):
        return verb + "es"
    return verb + "s"


def reported(sentence: str) -> str:
    """What the answer does, as "The answer ...", from one of its sentences."""
    sentence = sentence.rstrip(".!").strip()
    if sentence.startswith(("If ", "When ")) and ", I'd " in sentence:
        condition, main = sentence.split(", I'd ", 1)
        said = reported("I'd " + main)
        return f"{said}, {condition[:1].lower()}{condition[1:]}"
    for pattern, say in _REPORTED:
        found = pattern.match(sentence)
        if found:
            groups = found.groups()
            said = say.format(*groups, verb=_third_person(groups[0]))
            said = _INNER_BASE.sub(lambda m: f"{m.group(1)} {_third_person(m.group(2))}", said)
            said = _INNER_I.sub(lambda m: _third_person(m.group(1)), said)
            said = re.sub(r"\byou to\b", "the reader to", said)
            said = re.sub(r"\byour\b", "their", said)
            return f"The answer {said}"
    first = sentence.split(maxsplit=1)[0].lower().strip(",:;") if sentence else ""
    sentence = _INNER_I.sub(lambda m: _third_person(m.group(1)), sentence)
    if first in _IMPERATIVE_STARTS:
        return f"The answer tells the reader to {sentence[:1].lower()}{sentence[1:]}"
    return f"The answer says that {_lowered(sentence)}"


def never(criterion: str) -> str:
    """ "The answer never suggests X" from "Suggests X"."""
    text = criterion.strip().rstrip(".")
    found = _VERB_LED.match(text)
    if found:
        return f"The answer never {text[:1].lower()}{text[1:]}"
    return f"Nothing in the answer does this: {_lowered(text)}"


def factual_explanation(
    *, criterion: str, negative: bool, found: Found, present: bool, met: bool
) -> str:
    """A sentence for a factual verdict. `present`: the statement was found; `met` differs
    from it (for a positive criterion; from `present` for a negative one too) only when the
    grader turned its verdict round."""
    if met == present:
        if present:
            tail = (
                "which this criterion warns against"
                if negative
                else "which this criterion asks for"
            )
            return f"{reported(found.sentence)}, {tail}."
        closest_part = (
            f"; the closest it comes is {quoted(found.sentence)}, which covers only part of it"
            if found.share >= 0.25
            else ""
        )
        avoided = (
            ", so it avoids what this criterion warns against"
            if negative and not closest_part
            else ""
        )
        return f"{never(criterion)}{avoided}{closest_part}."
    if present:  # turned round: found, but not counted
        return (
            f"The answer touches on this only in passing ({quoted(found.sentence)}), not "
            "clearly enough to count."
        )
    if found.share > 0:
        what = "warns against" if negative else "asks for"
        return (
            f"The answer's {quoted(found.sentence)} comes close enough to what this criterion "
            f"{what} to count."
        )
    if negative:
        return "Read as a whole, the answer leans toward what this criterion warns against."
    return "Read as a whole, the answer gets at what this criterion asks for, if indirectly."


def presentation_explanation(feature: str, evidence: str | None, text: str) -> str:
    """A sentence saying what the answer has (or lacks) of `feature`; `evidence` is the
    bank's sentence found, if any."""
    if feature == "lead":
        if evidence:
            return (
                f"The answer spends its opening on background ({quoted(evidence)}) before it "
                "says what to do."
            )
        first = first_advice(text)
        return (
            f"The answer opens with its advice: {quoted(first)}."
            if first
            else "The answer gets straight to the point."
        )
    if feature == "focus":
        if evidence:
            return f"The answer goes beyond the question: {quoted(evidence)}."
        return "The answer keeps to what was asked and adds nothing beyond it."
    if feature == "unprofessional":
        if evidence:
            return f"The answer's remark {quoted(evidence)} is unprofessional."
        return "The answer keeps a professional tone throughout."
    if feature == "imperative":
        if evidence:
            return (
                f"The answer orders the reader about ({quoted(evidence)}) instead of advising them."
            )
        return "The answer advises rather than orders, and leaves the choices to the reader."
    if evidence:  # overstate
        return f"The answer overstates what its advice can do: {quoted(evidence)}."
    return "The answer does not promise more than its measures can do."
