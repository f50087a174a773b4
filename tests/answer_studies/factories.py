"""A graded benchmark to draw answer studies from, built by the benchmark report's builders
(tests/analysis/benchmark_builders.py: real judgments, scores by the grading app's rule), and
answer studies drawn from it through the service."""

from django.db.models import Max

from apps.answer_studies.services import answer_study_create
from apps.llm.models import PromptTemplate, Purpose
from tests.analysis.benchmark_builders import FAILED, UNGRADED, Bench, Q, bench_make

MODELS = {"Alpha": "A", "Beta": "B", "Gamma": "C"}
QUESTIONS = [
    Q("q1"),
    Q("q2"),
    Q("q3"),
    Q("q4", topic="scams"),
    Q("q5", topic="scams"),
    Q("q6", topic="scams"),
]
LEVELS = [0.3, 0.5, 0.7, 0.9]  # two below the 0.65 line, two at or above it


def scores(model: int, question: int) -> list:
    """Two answers per model and question, spread over both bands."""
    return [LEVELS[(model + question + sample) % 4] for sample in range(2)]


def bench_for_draw(*, left_out=True, models=MODELS) -> Bench:
    """Three models x six questions (two topics) x two answers, scored on both sides of the
    0.65 line. With `left_out`, Alpha's second answer to q1 failed and Beta's second answer to
    q2 is not graded: neither may be drawn."""
    answers = {
        (name, spec.key): scores(m, q)
        for m, name in enumerate(models)
        for q, spec in enumerate(QUESTIONS)
    }
    if left_out:
        answers[("Alpha", "q1")] = [answers[("Alpha", "q1")][0], FAILED]
        answers[("Beta", "q2")] = [answers[("Beta", "q2")][0], UNGRADED]
    return bench_make(models=models, questions=QUESTIONS, answers=answers, name="Draw bench")


def prompt_with_words(user_text: str = "Someone asks for help:\n\n$question") -> PromptTemplate:
    """A sampling prompt version that puts words around the question."""
    newest = PromptTemplate.objects.filter(purpose=Purpose.SAMPLE).aggregate(v=Max("version"))
    return PromptTemplate.objects.create(
        purpose=Purpose.SAMPLE, version=(newest["v"] or 0) + 1, user_text=user_text
    )


def study_drawn(bench: Bench, **settings):
    """An answer study drawn from `bench`: 1 answer per stratum and 2 pairs per two models,
    unless `settings` say otherwise."""
    values = {
        "name": "Answers",
        "sampling_run": bench.sampling,
        "grading_run": bench.grading,
        "seed": 7,
        "answers_per_stratum": 1,
        "pairs_per_model_pair": 2,
        "ratings_per_unit": 3,
        "units_per_participant": 3,
        **settings,
    }
    return answer_study_create(**values)
