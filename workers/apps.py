"""The worker package as a Django app: when Django starts, in every process that loads it,
it registers how each kind of background work is queued (apps/llm/dispatch.py), so that
the services that make work can start it without importing any task."""

from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Background work"

    def ready(self):
        from apps.llm import dispatch, engine

        from .analysis import survey_bootstrap_task
        from .engine import run_batch_task
        from .questions import embedding_cosines_task, import_posts_task

        dispatch.queue_register(engine.BATCH, run_batch_task.delay)
        dispatch.queue_register("questions.import_posts", import_posts_task.delay)
        dispatch.queue_register("questions.embedding_cosines", embedding_cosines_task.delay)
        dispatch.queue_register("analysis.survey_bootstrap", survey_bootstrap_task.delay)
