from django.db.models import Count, Q, Sum

from ..models import ImportBatch, ImportStatus, LabelStatus, Question, SampledPost, ScreeningOutcome


def pipeline_overview() -> dict:
    """How far the bank has come, stage by stage, for the researcher's home page. The pool
    is counted from its import batches: counting millions of posts is a scan."""
    pool = ImportBatch.objects.filter(status=ImportStatus.DONE).aggregate(
        posts=Sum("rows"), files=Count("pk")
    )
    sampled = SampledPost.objects.aggregate(
        total=Count("pk"),
        open=Count("pk", filter=Q(outcome=ScreeningOutcome.OPEN)),
        included=Count("pk", filter=Q(outcome=ScreeningOutcome.INCLUDED)),
    )
    questions = Question.objects.aggregate(
        total=Count("pk"),
        to_label=Count(
            "pk",
            filter=Q(
                label_status__in=[
                    LabelStatus.UNLABELLED,
                    LabelStatus.LABELLED,
                    LabelStatus.DISPUTED,
                ]
            ),
        ),
        rewritten=Count("pk", filter=Q(rewrite_approved_at__isnull=False)),
    )
    return {
        "posts": pool["posts"] or 0,
        "files": pool["files"],
        "sampled": sampled["total"],
        "screening_open": sampled["open"],
        "included": sampled["included"],
        "questions": questions["total"],
        "to_label": questions["to_label"],
        "rewritten": questions["rewritten"],
    }
