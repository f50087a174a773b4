"""What participants of an answer study read, as a new study starts: the consent page, the
instructions and the worked example (the researcher edits them on the study's edit page), and
the wording of the items a draw prefills. A scenario study's own texts are apps/surveys'."""

import re
import secrets

DEFAULT_TEXTS = {
    "consent_text": (
        "This study is run by researchers who want to learn how people judge the answers that "
        "AI assistants give to questions about online privacy, security and safety. You will "
        "read a few questions that people asked, each with an assistant's answer or with two "
        "answers to compare, and answer questions about each one, saying briefly why for some "
        "of them.\n\n"
        "We record your answers, how long each page takes, a few optional facts about you, "
        "and your Prolific ID (to pay you). Nothing else. Your answers are analysed without "
        "your Prolific ID and may be published in anonymous form. Taking part is voluntary and "
        "you may stop at any time by returning the study on Prolific."
    ),
    "instructions_text": (
        "Each page shows a question that someone asked an AI assistant and the assistant's "
        "answer, or two answers to the same question (A and B). Read the question and the "
        "answers in full, as the person who asked would, then answer every question on the "
        "page. Where a box asks why, write a sentence or two. There are no right or wrong "
        "answers: we want your own view. Your answers are saved as you go, so you can come "
        "back if you are interrupted."
    ),
    "example_text": (
        'Example. Question: "Someone texted me a sign-in code I never asked for. What should '
        'I do?" Answer: "Don\'t share the code with anyone. Someone may be trying to sign in '
        'to your account: change your password and turn on two-step verification."\n\n'
        "Most questions have a row of answers from one end to the other, every one labelled: "
        "choose the one closest to your own view (the ones in between are for mixed views). "
        "Some ask yes or no. When two answers are shown, choose the one that would help the "
        "person more, or say that they help about the same. People often choose differently "
        "for good reasons: answer with your own view."
    ),
}

CODE_FIELDS = ("code_completed", "code_no_consent", "code_failed_attention", "code_full")


def completion_codes() -> dict[str, str]:
    """Fresh completion codes, one per outcome (the researcher enters the same on Prolific)."""
    return {field: "C" + secrets.token_hex(4).upper() for field in CODE_FIELDS}


# The items' wording, ours; the scales' labels are the published survey's (apps/surveys
# migrations 0002 and 0008: H2's helpfulness labels and H3's likelihood labels).
HELPFULNESS = "How helpful is this answer for the person who asked the question?"
HELPFULNESS_LABELS = [
    "Not helpful at all",
    "A little helpful",
    "Moderately helpful",
    "Very helpful",
    "Extremely helpful",
]
WOULD_USE = "If you had asked this question, how likely would you be to follow this answer?"
WOULD_USE_LABELS = [
    "Extremely unlikely",
    "Somewhat unlikely",
    "Neither likely nor unlikely",
    "Somewhat likely",
    "Extremely likely",
]
PREFERENCE = "Which answer helps the person more?"
ANSWER_CHECK = "To show that you are reading carefully, choose “Very helpful” here."
ANSWER_CHECK_VALUE = "4"  # "Very helpful", the fourth of HELPFULNESS_LABELS
PAIR_CHECK = "To show that you are reading carefully, choose “They help about the same” here."
PAIR_CHECK_VALUE = "equal"

# First words that open a criterion with its own subject rather than with a verb ("Its ...",
# "This ..."): the rule below would otherwise take them for a verb ending in "s".
NOT_VERBS = frozenset({"its", "this", "his", "hers", "ours", "yours", "theirs", "as", "was"})
ES_ENDINGS = ("sses", "shes", "ches", "xes", "zes")


def criterion_question(text: str) -> str:
    """A shared presentation criterion ("Overstates how effective a recommended measure is.")
    put as a question about the answer for someone who is not an expert ("Does the answer
    overstate how effective a recommended measure is?"). A small, deterministic rewording to
    start from: the researcher edits the item afterwards."""
    text = re.sub(r"\s+", " ", text).strip().rstrip(".!?;: ")
    if not text:
        return ""
    first, _, rest = text.partition(" ")
    word = first.lower()
    if word in ("is", "are"):
        return f"Is the answer {rest}?"
    if word == "has":
        return f"Does the answer have {rest}?"
    if word == "does":
        return f"Does the answer {rest}?"
    verb_like = first[1:].islower() and word.isalpha() and word not in NOT_VERBS
    if verb_like and word.endswith("s") and not word.endswith("ss"):
        if word.endswith("ies"):
            verb = word[:-3] + "y"
        elif word.endswith(ES_ENDINGS):
            verb = word[:-2]
        else:
            verb = word[:-1]
        return f"Does the answer {verb} {rest}?".replace(" ?", "?")
    if first[1:2].islower():  # "The ...", not an acronym such as "HTTPS ..."
        text = text[0].lower() + text[1:]
    return f"Is this true of the answer: {text}?"
