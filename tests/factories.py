"""Rows for tests: factory-boy factories, and the few builders that go through the services
because the path matters (a rubric is drafted, submitted and approved as an expert would)."""

import csv
import io
import json
import secrets
from decimal import Decimal
from pathlib import Path

import factory

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.accounts.services import user_set_roles
from apps.llm.models import CallStatus, LLMCall, ModelConfig, PromptTemplate, ProviderBatch
from apps.llm.services import llm_calls_record
from apps.questions.models import (
    FileFormat,
    ImportBatch,
    ImportStatus,
    LabelStatus,
    Question,
    SourcePost,
    SourcePostTopic,
    Topic,
    length_bucket_for,
)
from apps.rubrics import services as rubric_services
from apps.rubrics.models import QuestionAssignment, Rubric
from apps.surveys.models import ItemKind, Study, StudyKind, StudyScenario, SurveyItem, UnitKind

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple"


# --- accounts -----------------------------------------------------------------------------


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    first_name = factory.Faker("first_name")
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create:
            user_set_roles(user=self, roles=list(extracted or []))


def user_with_role(role: Role | None, **kwargs) -> User:
    return UserFactory(roles=[role] if role else [], **kwargs)


# --- the gateway --------------------------------------------------------------------------


def api_base(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


class ModelConfigFactory(factory.django.DjangoModelFactory):
    """A model served by an offline provider a test started (pass `api_base`)."""

    class Meta:
        model = ModelConfig
        django_get_or_create = ("display_name",)

    class Params:
        name = "offline-terse"

    display_name = factory.LazyAttribute(lambda m: f"{m.name} @ {m.api_base}")
    family = "Offline"
    litellm_model = factory.LazyAttribute(lambda m: f"openai/{m.name}")
    api_base = "http://127.0.0.1:9/v1"
    max_concurrent = 8
    timeout_seconds = 10
    input_price_per_mtok = Decimal("2.50")
    output_price_per_mtok = Decimal("10.00")


def offline_model(base_url: str, name: str = "offline-terse", **fields) -> ModelConfig:
    """A ModelConfig for the model `name` of the offline provider at `base_url`."""
    return ModelConfigFactory(name=name, api_base=api_base(base_url), **fields)


def provider_batches_make(*, work: str, scope: int, model: ModelConfig, count: int = 1, **fields):
    """`count` provider batches of a run (apps/llm/models.py ProviderBatch), as the engine
    leaves them, numbered by `requests` (1, 2, ...) unless `fields` says otherwise."""
    return [
        ProviderBatch.objects.create(
            work=work, scope=scope, model=model, **{"requests": n, **fields}
        )
        for n in range(1, count + 1)
    ]


def call_recorded(*, template: PromptTemplate, model: ModelConfig | None = None) -> LLMCall:
    """A ledger row for a call made with `template`, recorded as the gateway records one
    (which marks the template used)."""
    model = model or ModelConfigFactory()
    call = LLMCall(
        model=model,
        purpose=template.purpose,
        attempt=1,
        status=CallStatus.OK,
        prompt_template=template,
    )
    return llm_calls_record(calls=[call])[0]


# --- questions and rubrics ----------------------------------------------------------------


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Question

    class Params:
        topic_name = "accounts"

    external_id = factory.Sequence(lambda n: f"q-{n + 1}")
    topic = factory.LazyAttribute(lambda q: Topic.objects.get(name=q.topic_name))
    text = factory.Sequence(
        lambda n: f"How do I keep my account number {n + 1} safe after a phishing email?"
    )
    length_bucket = factory.LazyAttribute(lambda q: length_bucket_for(q.text))


_POST_NUMBERS = iter(range(1, 10**9))


def posts_make(
    count: int = 1, *, topics: tuple[str, ...] = ("accounts",), body: str | None = None, **fields
) -> list[SourcePost]:
    """`count` candidate posts labelled with `topics`, in a batch of their own (as if one
    file had been imported): for the stages after the import."""
    batch = ImportBatch.objects.create(
        filename="posts.csv",
        sha256=secrets.token_hex(32),
        file_format=FileFormat.CSV,
        status=ImportStatus.DONE,
        rows=count,
    )
    topic_ids = [Topic.objects.get(name=name).pk for name in topics]
    posts = []
    for line in range(2, count + 2):
        number = next(_POST_NUMBERS)
        text = (
            body
            if body is not None
            else (
                f"Someone keeps trying to get into my account, number {number}. "
                "I changed my password already. What else should I do?"
            )
        )
        posts.append(
            SourcePost(
                external_id=f"t3_{number:08x}",
                subreddit="privacy",
                title=f"Help {number}",
                body=text,
                created_utc="2023-01-01T00:00:00Z",
                topic_ids=topic_ids,
                body_chars=len(text),
                batch=batch,
                line=line,
                **fields,
            )
        )
    posts = SourcePost.objects.bulk_create(posts)
    SourcePostTopic.objects.bulk_create(
        SourcePostTopic(post=post, topic_id=topic_id) for post in posts for topic_id in topic_ids
    )
    return posts


def question_make(*, topic: str = "accounts", text: str | None = None, **fields) -> Question:
    if text is not None:
        fields["text"] = text
    return QuestionFactory(topic_name=topic, **fields)


NEED_LABELS = {
    "both": (True, True),
    "sense": (True, False),
    "guide": (False, True),
    "neither": (False, False),
}


def questions_by_need(**fields) -> dict[str, Question]:
    """A question with verified labels for each answer to the two needs (sensemaking,
    guidance): "both", "sense", "guide", "neither"; and one not labelled, "unlabelled"."""
    made = {}
    for key, (sensemaking, guidance) in NEED_LABELS.items():
        made[key] = question_make(
            needs_sensemaking=sensemaking,
            needs_guidance=guidance,
            label_status=LabelStatus.VERIFIED,
            **fields,
        )
    made["unlabelled"] = question_make(**fields)
    return made


def assign(question: Question, *, author=None, reviewer=None) -> QuestionAssignment:
    assignment, _ = QuestionAssignment.objects.update_or_create(
        question=question, defaults={"author": author, "reviewer": reviewer}
    )
    return assignment


CRITERIA = [
    ("Recommends turning on two-factor authentication.", "positive", "factual", 5),
    ("Suggests checking the account's recent sign-in activity.", "positive", "factual", 3),
    ("Tells the person to reply to the email to confirm it is fake.", "negative", "factual", 5),
]


def question_assigned(author, *, reviewer=None, topic: str = "accounts", **fields) -> Question:
    """A question whose rubric `author` is assigned to write (as a researcher would assign)."""
    question = question_make(topic=topic, **fields)
    assign(question, author=author, reviewer=reviewer)
    return question


def draft_with_criteria(question: Question, author, criteria=CRITERIA) -> Rubric:
    """`author`'s draft of `question`'s rubric; they are assigned to it if no one is."""
    if not QuestionAssignment.objects.filter(question=question, author__isnull=False).exists():
        assignment = QuestionAssignment.objects.filter(question=question).first()
        assign(question, author=author, reviewer=assignment.reviewer if assignment else None)
    rubric = rubric_services.rubric_start(question=question, user=author)
    for text, polarity, kind, points in criteria:
        rubric_services.criterion_add(
            rubric=rubric,
            user=author,
            revision=rubric.revision,
            text=text,
            polarity=polarity,
            kind=kind,
            points=points,
        )
        rubric.refresh_from_db()
    return rubric


def approved_rubric(question: Question, author, reviewer, criteria=CRITERIA) -> Rubric:
    rubric = draft_with_criteria(question, author, criteria)
    rubric_services.rubric_submit_for_review(rubric=rubric, user=author)
    rubric_services.rubric_approve(rubric=rubric, user=reviewer)
    rubric.refresh_from_db()
    return rubric


# --- surveys ------------------------------------------------------------------------------

FIXTURE = ROOT / "apps" / "surveys" / "fixtures" / "privacylens-scenarios-40.json"
RESPONSES = ROOT / "apps" / "surveys" / "fixtures" / "demo-responses-40.csv"
CODES = {
    "code_completed": "DONE1234",
    "code_no_consent": "NOPE1234",
    "code_failed_attention": "ATTN1234",
    "code_full": "FULL1234",
}


def fixture_records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def new_pid() -> str:
    return secrets.token_hex(12)


def responses_csv(scenarios) -> str:
    """The bundled demo responses of `scenarios`, as CSV."""
    names = {s.name for s in scenarios}
    rows = list(csv.DictReader(io.StringIO(RESPONSES.read_text())))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(r for r in rows if r["scenario"] in names)
    return out.getvalue()


# --- studies of answers ----------------------------------------------------------------------
# Units as apps/answer_studies leaves them (their texts copied from the benchmark's answers),
# made here with nothing of that app: the surveys app takes them on their own.

ANSWER_MARKDOWN = (
    "**Change your password** first, then:\n\n"
    "1. Turn on two-factor authentication.\n"
    "2. Check the account's recent sign-ins.\n"
)


class AnswerStudyFactory(factory.django.DjangoModelFactory):
    """A draft study of answers, with no units and no items (see answer_study_make)."""

    class Meta:
        model = Study

    name = factory.Sequence(lambda n: f"Answer study {n + 1}")
    kind = StudyKind.ANSWERS
    scenarios_per_participant = 2
    ratings_per_scenario = 3
    consent_text = "We ask what you think of answers an AI assistant gave to people's questions."
    instructions_text = "Read the question and the answer, then answer every question on the page."
    example_text = "A question, an answer, and what someone thought of it."
    code_completed = CODES["code_completed"]
    code_no_consent = CODES["code_no_consent"]
    code_failed_attention = CODES["code_failed_attention"]
    code_full = CODES["code_full"]


class StudyAnswerUnitFactory(factory.django.DjangoModelFactory):
    """A unit that shows a question and one model's answer to it (Markdown)."""

    class Meta:
        model = StudyScenario

    study = factory.SubFactory(AnswerStudyFactory)
    kind = UnitKind.ANSWER
    label = factory.Sequence(lambda n: f"Answer {n + 1:03d}")
    question_text = factory.Sequence(
        lambda n: f"Someone got into my email (number {n + 1}).\nWhat should I do first?"
    )
    answer_text = ANSWER_MARKDOWN


class PairUnitFactory(StudyAnswerUnitFactory):
    """A unit that shows a question and two models' answers to compare (A and B)."""

    kind = UnitKind.PAIR
    label = factory.Sequence(lambda n: f"Pair {n + 1:03d}")
    answer_b_text = "Contact the provider's support and *wait* for them to reply."


class SurveyItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SurveyItem

    code = factory.Sequence(lambda n: f"I{n + 1}")
    wording = factory.Sequence(lambda n: f"Question {n + 1} about the answer?")
    kind = ItemKind.SCALE
    scale_labels = ["Not at all", "Slightly", "Somewhat", "Very", "Extremely"]
    unit_kind = UnitKind.ANSWER
    order = factory.Sequence(lambda n: n)


def answer_items_make(study) -> list:
    """The items of a study of answers: two asked of each answer (a scale with an
    explanation; a yes/no without), and the preference asked of each pair."""
    return [
        SurveyItemFactory(study=study, code="AH", wording="How helpful is this answer?"),
        SurveyItemFactory(
            study=study,
            code="AU",
            wording="Would you follow this advice?",
            kind=ItemKind.YES_NO,
            scale_labels=[],
            explanation_required=False,
        ),
        SurveyItemFactory(
            study=study,
            code="PP",
            wording="Which answer helps the person more?",
            kind=ItemKind.PAIR,
            scale_labels=[],
            unit_kind=UnitKind.PAIR,
        ),
    ]


def answer_study_make(*, answers: int = 3, pairs: int = 1, live: bool = True, **fields):
    """A study of `answers` answer units and `pairs` pair units asking answer_items_make's
    items; live unless told otherwise (through the service, which checks it can be)."""
    from apps.surveys import services
    from apps.surveys.models import StudyStatus

    study = AnswerStudyFactory(**fields)
    StudyAnswerUnitFactory.create_batch(answers, study=study)
    PairUnitFactory.create_batch(pairs, study=study)
    answer_items_make(study)
    if live:
        study = services.study_set_status(study=study, status=StudyStatus.LIVE)
    return study


# --- question bank: sampling and screening -------------------------------------------------


def exclusion_reasons_seeded() -> list:
    """The nine seeded exclusion reasons, in their order (conftest's reseeding puts them
    back after a transactional test's flush)."""
    from apps.questions.models import ExclusionReason

    return list(ExclusionReason.objects.filter(active=True).order_by("order", "text"))


def sampled_make(count: int = 1, *, topic: str = "accounts", body: str | None = None, seed=1):
    """`count` new posts of `topic`, drawn into a sample of their own; their SampledPosts,
    in the order drawn."""
    from apps.questions.services.sampling import sample_draw

    posts_make(count, topics=(topic,), body=body)
    sample = sample_draw(topic=Topic.objects.get(name=topic), size=count, seed=seed)
    return list(sample.posts.select_related("post").order_by("position"))


# --- question bank: rewriting --------------------------------------------------------------


def rewrite_prompt_v2():
    """The rewrite prompt v2 (seeded by its migration, and by conftest's reseeding)."""
    from apps.llm.models import PromptTemplate

    return PromptTemplate.objects.get(purpose="rewrite", version=2)


def question_from_post_make(*, body: str, topic: str = "accounts", **fields) -> Question:
    """A question made from a screened post: its text is the post until a rewrite is
    approved."""
    return question_make(topic=topic, text=body, original_text=body, **fields)


def rewrite_made(question: Question, *, text: str, model: ModelConfig | None = None):
    """A rewrite of `question` done by `model` (a finished job of its own, no call made)."""
    from apps.llm.models import RunStatus
    from apps.questions.models import Rewrite, RewriteJob, RewriteStatus

    job = RewriteJob.objects.create(
        model=model or ModelConfigFactory(),
        prompt=rewrite_prompt_v2(),
        seed=1,
        status=RunStatus.FINISHED,
    )
    return Rewrite.objects.create(job=job, question=question, status=RewriteStatus.DONE, text=text)


def job_run(work, pk: int):
    """Work a job of one row (apps/llm/runs.py RowWork) here, as a worker's batch would: the
    row afterwards, or None when it was not this call's to work (done, failed, held by a live
    worker, or out of attempts)."""
    from apps.llm import engine

    if not engine.batch_run(work=work.name, scope=pk).claimed:
        return None
    return work.jobs().get(pk=pk)
