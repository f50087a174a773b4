from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    """Topics and the question bank. Depends on accounts only; rubrics and runs build on it."""

    name = "apps.questions"
    label = "questions"
    verbose_name = "Question bank"
