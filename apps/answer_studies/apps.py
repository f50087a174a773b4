from django.apps import AppConfig


class AnswerStudiesConfig(AppConfig):
    """Where the two study designs meet: people, proxies and the auto-rater judge a benchmark's
    answers. It draws the answers and links each study unit to them; the survey itself
    (arrival, exactly k ratings, proxies) is apps.surveys'."""

    name = "apps.answer_studies"
    label = "answer_studies"
    verbose_name = "Answer studies"
