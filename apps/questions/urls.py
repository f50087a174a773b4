from django.urls import path

from apps.llm.progress import run_paths

from .views import bank, rewriting, sampling, screening, strata

app_name = "questions"
urlpatterns = [
    # The bank: list, filter, export (views/bank.py).
    path("", bank.bank, name="bank"),
    path("export.csv", bank.bank_csv, name="bank-csv"),
    path("export.json", bank.bank_json, name="bank-json"),
    # Sampling the pool (views/sampling.py).
    path("samples/", sampling.samples, name="samples"),
    # Screening in pairs (views/screening.py).
    path("screening/", screening.queue, name="screening"),
    path("screening/<int:pk>/", screening.decide, name="screening-decide"),
    path("screening/progress/", screening.dashboard, name="screening-dashboard"),
    path("screening/undo/", screening.undo, name="screening-undo"),
    # Strata labels, their verification, and the quotas (views/strata.py).
    path("labels/", strata.labels, name="labels"),
    path("labels/<int:pk>/", strata.label, name="label"),
    path("labels/disputes/", strata.disputes, name="disputes"),
    path("quotas/", strata.quotas, name="quotas"),
    # Rewriting (views/rewriting.py).
    path("rewrites/", rewriting.rewrites, name="rewrites"),
    path("rewrites/<int:pk>/", rewriting.review, name="rewrite"),
    path("rewrites/<int:pk>/reject/", rewriting.reject, name="rewrite-reject"),
    *run_paths(
        "rewrites/jobs/<int:pk>/",
        rewriting.job_move,
        name="rewrite-job-{move}",
        moves=rewriting.JOB_MOVES,
    ),
    path("rewrites/embeddings/", rewriting.embedding_cosines, name="embedding-cosines"),
]

# Setting up the bank on the researcher's pages (views/setup.py).
from .views import setup  # noqa: E402

urlpatterns += [
    path("setup/posts/", setup.posts_import, name="setup-posts"),
    path("setup/posts/<int:pk>/", setup.post_import, name="setup-post-import"),
    path("setup/questions/", setup.questions_upload, name="setup-questions"),
    path("setup/topics/", setup.topics, name="setup-topics"),
    path("setup/topics/<int:pk>/", setup.topic_edit, name="setup-topic"),
]
