"""Reads of the reports that more than one entry point serves (the pages and the API).

A study's survey data (and an answer study's data) is read once per fingerprint and kept in
the cache: a report and its plots and downloads are several requests over the same rows, and
a change to the data changes the fingerprint, and so what is read.

The report's statistics (apps/analysis/survey.py: numpy, pandas, scipy) are imported when a
report is computed, not with this module: every web process imports it through the URLconf.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from django.core.cache import cache

from apps.grading.models import GradingRun
from apps.grading.selectors.calibration import answers_blind
from apps.surveys.models import Study

from .answer_study_data import AnswerStudyData, answer_study_data, answer_study_fingerprint
from .models import RESAMPLES, SEED, BootstrapReport, BootstrapStatus, SurveyBootstrap
from .survey_data import SurveyData, survey_data, survey_fingerprint
from .tables import ANSWERS, Table

if TYPE_CHECKING:
    from .answer_study import AnswerStudyReport
    from .survey import SurveyReport

DATA_SECONDS = 3600


def survey_data_cached(*, study: Study, fingerprint: str) -> SurveyData:
    key = f"analysis:survey:{study.pk}:{fingerprint}"
    data = cache.get(key)
    if data is None:
        data = survey_data(study=study)
        cache.set(key, data, DATA_SECONDS)
    return data


def survey_bootstrap_current(*, study: Study, fingerprint: str) -> SurveyBootstrap | None:
    return _bootstrap_current(study=study, report=BootstrapReport.SURVEY, fingerprint=fingerprint)


def _bootstrap_current(*, study: Study, report: str, fingerprint: str) -> SurveyBootstrap | None:
    return SurveyBootstrap.objects.filter(
        study=study, report=report, fingerprint=fingerprint, resamples=RESAMPLES, seed=SEED
    ).first()


def survey_report_current(
    *, study: Study
) -> tuple[SurveyData, SurveyReport, SurveyBootstrap | None]:
    """The study's report on its data as it is now, with the intervals once computed."""
    from .survey import survey_report

    fingerprint = survey_fingerprint(study=study)
    data = survey_data_cached(study=study, fingerprint=fingerprint)
    bootstrap = survey_bootstrap_current(study=study, fingerprint=fingerprint)
    done = bootstrap is not None and bootstrap.status == BootstrapStatus.DONE
    report = survey_report(data, intervals=bootstrap.intervals if done else None)
    return data, report, bootstrap


def answer_study_data_cached(*, study: Study, fingerprint: str) -> AnswerStudyData:
    key = f"analysis:answer-study:{study.pk}:{fingerprint}"
    data = cache.get(key)
    if data is None:
        data = answer_study_data(study=study)
        cache.set(key, data, DATA_SECONDS)
    return data


def answer_study_bootstrap_current(*, study: Study, fingerprint: str) -> SurveyBootstrap | None:
    return _bootstrap_current(study=study, report=BootstrapReport.ANSWERS, fingerprint=fingerprint)


def answer_study_report_current(
    *, study: Study
) -> tuple[AnswerStudyData, AnswerStudyReport, SurveyBootstrap | None]:
    """The answer study's report on its data as it is now, with the intervals once computed."""
    from .answer_study import answer_study_report

    fingerprint = answer_study_fingerprint(study=study)
    data = answer_study_data_cached(study=study, fingerprint=fingerprint)
    bootstrap = answer_study_bootstrap_current(study=study, fingerprint=fingerprint)
    done = bootstrap is not None and bootstrap.status == BootstrapStatus.DONE
    report = answer_study_report(data, intervals=bootstrap.intervals if done else None)
    return data, report, bootstrap


def benchmark_table_shown(*, table: Table, run: GradingRun, viewer) -> Table:
    """A benchmark report's table as `viewer` may read it: one that lists answers (the
    answers below 65%, each with its score; an answer study's answers, each linked to the
    answer viewer) leaves out those they still grade blind for calibration
    (apps/grading/selectors/calibration.py, blind_to_rater)."""
    if not any(_answer_of(row) is not None for row in table.rows):
        return table
    blind = answers_blind(viewer=viewer, sampling_run_id=run.sampling_run_id)
    if not blind:
        return table
    return dataclasses.replace(table, rows=[r for r in table.rows if _answer_of(r) not in blind])


def _answer_of(row: dict) -> int | None:
    """The answer a table's row lists: its `response` cell, or the answer its link opens."""
    if "response" in row:
        return row["response"]
    return (row.get(ANSWERS) or {}).get("answer")
