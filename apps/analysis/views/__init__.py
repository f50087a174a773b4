"""The analysis app's pages (role_required(RESEARCHER)): the Reports page, each study's
survey report (survey.py), each answer study's report (answer_study.py) and each grading
run's benchmark report (benchmark.py). The URL
names of apps/analysis/urls.py resolve to the functions re-exported here."""

from .answer_study import (
    answer_study_bootstrap,
    answer_study_figure_svg,
    answer_study_report_page,
    answer_study_table_csv,
)
from .benchmark import (
    benchmark_compare,
    benchmark_compare_choose,
    benchmark_compare_csv,
    benchmark_figure_svg,
    benchmark_low_questions,
    benchmark_low_responses,
    benchmark_report_page,
    benchmark_table_csv,
)
from .survey import (
    report_index,
    survey_bootstrap,
    survey_disagreements,
    survey_figure_svg,
    survey_report_page,
    survey_table_csv,
)

__all__ = [
    "answer_study_bootstrap",
    "answer_study_figure_svg",
    "answer_study_report_page",
    "answer_study_table_csv",
    "benchmark_compare",
    "benchmark_compare_choose",
    "benchmark_compare_csv",
    "benchmark_figure_svg",
    "benchmark_low_questions",
    "benchmark_low_responses",
    "benchmark_report_page",
    "benchmark_table_csv",
    "report_index",
    "survey_bootstrap",
    "survey_disagreements",
    "survey_figure_svg",
    "survey_report_page",
    "survey_table_csv",
]
