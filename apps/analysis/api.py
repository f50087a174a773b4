"""The reports' tables in the API: the same `Table`s the report pages show (a study's survey
report, an answer study's report, a grading run's benchmark report), as JSON (raw values at
full precision, a missing value as null) and as the page's own CSV."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.answer_studies.models import AnswerDraw
from apps.grading.models import GradingRun
from apps.surveys.models import Study, StudyKind

from .selectors import answer_study_report_current, benchmark_table_shown, survey_report_current
from .tables import Table, table_csv_response


class TableEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    n = serializers.CharField(help_text="What the numbers rest on.")
    figure = serializers.BooleanField(help_text="The data behind one of the report's figures.")


class SurveyReportSerializer(serializers.Serializer):
    study = serializers.IntegerField()
    n = serializers.CharField(help_text="What the whole report rests on.")
    tables = TableEntrySerializer(many=True)


class AnswerStudyReportSerializer(serializers.Serializer):
    study = serializers.IntegerField()
    n = serializers.CharField(help_text="What the whole report rests on.")
    grading_run = serializers.IntegerField(
        help_text="The grading run whose scores and verdicts the report sets beside people's."
    )
    sampling_run = serializers.IntegerField(help_text="The sampling run the answers come from.")
    tables = TableEntrySerializer(many=True)


class ColumnSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.ChoiceField(choices=["text", "int", "float", "percent"])


class TableSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    n = serializers.CharField()
    notes = serializers.ListField(child=serializers.CharField())
    columns = ColumnSerializer(many=True)
    rows = serializers.ListField(
        child=serializers.DictField(),
        help_text="One object per row, keyed by the columns' keys; a missing value is null. "
        "A percent column holds percentage points (42.5 for 42.5%).",
    )


class BenchmarkReportSerializer(serializers.Serializer):
    grading_run = serializers.IntegerField()
    n = serializers.CharField(help_text="What the whole report rests on.")
    tables = TableEntrySerializer(many=True)


def _tables(report) -> dict[str, tuple[Table, bool]]:
    """A report's tables and its figures' data, by name (as the pages' CSV links name them)."""
    tables = {name: (table, False) for name, table in report.tables.items()}
    for name, figure in report.figures.items():
        tables.setdefault(name, (figure.table, True))
    return tables


def table_json(table: Table) -> dict:
    keys = [column.key for column in table.columns]
    return {
        "name": table.name,
        "title": table.title,
        "n": table.n,
        "notes": list(table.notes),
        "columns": [{"key": c.key, "label": c.label, "kind": c.kind} for c in table.columns],
        # raw_rows: NumPy's numbers as plain ones and NaN as None, as the CSV has them.
        "rows": [dict(zip(keys, row, strict=True)) for row in table.raw_rows()],
    }


def _survey_table(study_id: int, name: str) -> tuple[Study, Table]:
    study = get_object_or_404(Study, pk=study_id)
    _data, report, _bootstrap = survey_report_current(study=study)
    found = _tables(report).get(name)
    if found is None:
        raise Http404("The survey report has no table of this name.")
    return study, found[0]


def _entries(report) -> list[dict]:
    return [
        {"name": name, "title": table.title, "n": table.n, "figure": figure}
        for name, (table, figure) in _tables(report).items()
    ]


def _answer_study_report(study_id: int):
    """An answer study's data and report; 404 for a study of scenarios, or one whose answers
    are not drawn yet."""
    study = get_object_or_404(Study, pk=study_id, kind=StudyKind.ANSWERS)
    if not AnswerDraw.objects.filter(study=study).exists():
        raise Http404("No answers have been drawn for this study yet.")
    data, report, _bootstrap = answer_study_report_current(study=study)
    return study, data, report


def _answer_study_table(request, study_id: int, name: str) -> tuple[Study, Table]:
    study, data, report = _answer_study_report(study_id)
    found = _tables(report).get(name)
    if found is None:
        raise Http404("The answer-study report has no table of this name.")
    # As the benchmark report's: without the answers the viewer still grades blind.
    run = GradingRun(pk=data.grading_run_id, sampling_run_id=data.sampling_run_id)
    return study, benchmark_table_shown(table=found[0], run=run, viewer=request.user)


TABLE1_PARAMETER = OpenApiParameter(
    "table1",
    OpenApiTypes.INT,
    many=True,
    explode=True,
    description="Table 1's model of a family instead of the family's newest, by model id "
    "(repeatable, one per family). A model that did not answer in the run, or a second model "
    "of one family, is refused with a 400.",
)


def _grading_run_table(request, run_id: int, name: str) -> tuple[GradingRun, Table]:
    # The report's module brings numpy, pandas and scipy: imported when a report is asked
    # for, not with the URLconf that every web process loads.
    from .benchmark import benchmark_report_for, table1_parse
    from .benchmark_data import benchmark_models

    run = get_object_or_404(GradingRun, pk=run_id)
    values = request.query_params.getlist("table1")
    table1, refused = table1_parse(values, benchmark_models(run=run)) if values else ([], [])
    if refused:
        raise serializers.ValidationError({"table1": refused})
    found = _tables(benchmark_report_for(run=run, table1=table1 or None)).get(name)
    if found is None:
        raise Http404("The benchmark report has no table of this name.")
    return run, benchmark_table_shown(table=found[0], run=run, viewer=request.user)


class SurveyReportView(APIView):
    """The tables of a study's survey report (people and proxy models compared)."""

    @extend_schema(responses=SurveyReportSerializer, operation_id="reports_survey_retrieve")
    def get(self, request, study_id: int):
        study = get_object_or_404(Study, pk=study_id)
        _data, report, _bootstrap = survey_report_current(study=study)
        return Response({"study": study.pk, "n": report.data_n, "tables": _entries(report)})


class SurveyTableView(APIView):
    """One table of a study's survey report, with its columns and raw values."""

    @extend_schema(responses=TableSerializer, operation_id="reports_survey_table_retrieve")
    def get(self, request, study_id: int, name: str):
        _study, table = _survey_table(study_id, name)
        return Response(table_json(table))


class SurveyTableCsvView(APIView):
    """One table of a study's survey report as CSV: the report page's own download."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The CSV.")},
        operation_id="reports_survey_table_csv",
    )
    def get(self, request, study_id: int, name: str):
        study, table = _survey_table(study_id, name)
        return table_csv_response(table, filename=f"study-{study.pk}-{name}.csv")


class AnswerStudyReportView(APIView):
    """The tables of an answer study's report (a benchmark's answers rated by people and
    proxies, beside the rubric scores and the auto-rater's verdicts). A study of scenarios
    has none: 404."""

    @extend_schema(
        responses=AnswerStudyReportSerializer, operation_id="reports_answer_study_retrieve"
    )
    def get(self, request, study_id: int):
        study, data, report = _answer_study_report(study_id)
        return Response(
            {
                "study": study.pk,
                "n": report.data_n,
                "grading_run": data.grading_run_id,
                "sampling_run": data.sampling_run_id,
                "tables": _entries(report),
            }
        )


class AnswerStudyTableView(APIView):
    """One table of an answer study's report, with its columns and raw values."""

    @extend_schema(responses=TableSerializer, operation_id="reports_answer_study_table_retrieve")
    def get(self, request, study_id: int, name: str):
        _study, table = _answer_study_table(request, study_id, name)
        return Response(table_json(table))


class AnswerStudyTableCsvView(APIView):
    """One table of an answer study's report as CSV: the report page's own download."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The CSV.")},
        operation_id="reports_answer_study_table_csv",
    )
    def get(self, request, study_id: int, name: str):
        study, table = _answer_study_table(request, study_id, name)
        return table_csv_response(table, filename=f"answer-study-{study.pk}-{name}.csv")


class BenchmarkReportView(APIView):
    """The tables of a grading run's benchmark report (scores by model and topic, met rates,
    the tests between models, across topics, and by prior attempt and by each need against
    its absence: `ks-prior`, `ks-sensemaking`, `ks-guidance`), with the default pairs of
    models."""

    @extend_schema(responses=BenchmarkReportSerializer, operation_id="reports_grading_run_retrieve")
    def get(self, request, run_id: int):
        from .benchmark import benchmark_report_for

        run = get_object_or_404(GradingRun, pk=run_id)
        report = benchmark_report_for(run=run)
        return Response({"grading_run": run.pk, "n": report.n, "tables": _entries(report)})


class BenchmarkTableView(APIView):
    """One table of a grading run's benchmark report, with its columns and raw values."""

    @extend_schema(
        responses=TableSerializer,
        parameters=[TABLE1_PARAMETER],
        operation_id="reports_grading_run_table_retrieve",
    )
    def get(self, request, run_id: int, name: str):
        _run, table = _grading_run_table(request, run_id, name)
        return Response(table_json(table))


class BenchmarkTableCsvView(APIView):
    """One table of a grading run's benchmark report as CSV: the report page's own download."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The CSV.")},
        parameters=[TABLE1_PARAMETER],
        operation_id="reports_grading_run_table_csv",
    )
    def get(self, request, run_id: int, name: str):
        run, table = _grading_run_table(request, run_id, name)
        return table_csv_response(table, filename=f"grading-{run.pk}-{name}.csv")
