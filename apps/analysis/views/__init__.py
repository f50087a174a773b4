"""The analysis app's pages (role_required(RESEARCHER)): the Reports page and each study's
survey report (survey.py). The URL names of apps/analysis/urls.py resolve to the functions
re-exported here."""

from .survey import (
    report_index,
    survey_bootstrap,
    survey_disagreements,
    survey_figure_svg,
    survey_report_page,
    survey_table_csv,
)

__all__ = [
    "report_index",
    "survey_bootstrap",
    "survey_disagreements",
    "survey_figure_svg",
    "survey_report_page",
    "survey_table_csv",
]
