from pathlib import Path

import numpy as np
import pandas as pd
from django.core.management.base import BaseCommand, CommandError

from stats.agreement import LEVELS, alpha, alpha_bootstrap, long_to_matrix
from stats.bootstrap import resample_draws

FIRST_ROW_LINE = 2  # line 1 is the header


class Command(BaseCommand):
    help = (
        "Krippendorff's alpha of any long-format CSV (one rating per row: unit, rater, value), "
        "with a seeded percentile bootstrap interval over units or over clusters of units."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--unit", required=True, help="the column naming the rated unit")
        parser.add_argument("--rater", required=True, help="the column naming the rater")
        parser.add_argument("--value", required=True, help="the column holding the rating")
        parser.add_argument("--level", required=True, choices=LEVELS)
        parser.add_argument(
            "--bootstrap", type=int, metavar="N", help="a 95%% interval from N resamples"
        )
        parser.add_argument("--seed", type=int, default=0, help="the resamples' seed (0)")
        parser.add_argument(
            "--cluster", metavar="COL", help="resample the groups of units this column names"
        )

    def handle(self, *args, file: Path, unit, rater, value, level, bootstrap, seed, cluster, **_):
        if bootstrap is not None and bootstrap < 1:
            raise CommandError("--bootstrap needs at least one resample.")
        frame = read_ratings(file, columns=[c for c in (unit, rater, value, cluster) if c])
        values = rating_values(file, frame[value], level=level)
        ratings = frame.assign(**{value: values})
        refuse_repeated_ratings(file, ratings, unit=unit, rater=rater)
        matrix, unit_labels, rater_labels = long_to_matrix(
            ratings, unit=unit, rater=rater, value=value
        )
        if cluster:
            clusters = unit_clusters(file, ratings, unit_labels, unit=unit, cluster=cluster)
        else:
            clusters = np.arange(len(unit_labels))
        rated = (~np.isnan(matrix)).sum(axis=0)
        if not (rated >= 2).any():
            raise CommandError(
                f"{file}: every one of its {len(unit_labels)} units has a single rating, so no "
                "two ratings of a unit can be compared: alpha needs units rated twice or more."
            )
        estimate = alpha(matrix, level=level)
        if np.isnan(estimate):
            raise CommandError(
                f"{file}: alpha is undefined: every rating of the units rated twice or more has "
                "the same value, so there is no disagreement to expect."
            )
        self.stdout.write(f"{file.name}, {level} level: Krippendorff's alpha = {estimate:.4f}")
        self.stdout.write(
            f"  {len(unit_labels)} units, {(rated >= 2).sum()} pairable (rated twice or more); "
            f"{len(rater_labels)} raters; {int(rated.sum())} ratings"
        )
        if bootstrap is None:
            return
        draws = resample_draws(int(clusters.max()) + 1, resamples=bootstrap, seed=seed)
        interval = alpha_bootstrap(matrix, level=level, clusters=clusters, draws=draws)
        resampled = f"clusters of column {cluster!r}" if cluster else "units"
        if interval.resamples_used:
            found = f"95% interval {interval.low:.4f} to {interval.high:.4f}"
        else:
            found = "no interval: alpha is undefined in every resample"
        self.stdout.write(
            f"  {found} (percentile bootstrap: {bootstrap} resamples of {resampled}, seed {seed})"
        )
        if interval.resamples_undefined:
            self.stdout.write(
                f"  {interval.resamples_undefined} resample(s) left out: alpha is undefined in "
                "them (their pairable ratings all have one value: no disagreement is expected)"
            )


def read_ratings(file: Path, *, columns: list[str]) -> pd.DataFrame:
    """The named columns of the file as stripped text, with an empty cell refused by line."""
    try:
        # Text throughout, and no guessing of missing values: every cell is checked here.
        frame = pd.read_csv(file, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except OSError as exc:
        raise CommandError(f"Cannot read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CommandError(f"Cannot read {file}: it is not UTF-8 text.") from exc
    except pd.errors.EmptyDataError as exc:
        raise CommandError(f"Cannot read {file}: it is empty.") from exc
    except pd.errors.ParserError as exc:
        raise CommandError(f"Cannot read {file} as CSV: {exc}") from exc
    for column in columns:
        if column not in frame.columns:
            raise CommandError(
                f"{file} has no column {column!r}; its columns are: "
                + ", ".join(repr(c) for c in frame.columns)
            )
    frame = frame[columns].apply(lambda texts: texts.str.strip())
    for column in columns:
        empty = np.flatnonzero(frame[column].eq("").to_numpy())
        if empty.size:
            raise CommandError(
                f"{file}, line {empty[0] + FIRST_ROW_LINE}: the column {column!r} is empty."
            )
    return frame


def rating_values(file: Path, texts: pd.Series, *, level: str) -> pd.Series:
    """Numbers, or at the nominal level text labels coded 0, 1, ... when any is not a number."""
    numbers = pd.to_numeric(texts, errors="coerce")
    bad = np.flatnonzero(~np.isfinite(numbers.to_numpy(dtype=float)))
    if not bad.size:
        return numbers.astype(float)
    if level == "nominal":
        codes, _labels = pd.factorize(texts)
        return pd.Series(codes, index=texts.index, dtype=float)
    why = {
        "ordinal": "ordinal values must be numbers so that they can be ordered",
        "interval": "the interval level needs numbers",
        "ratio": "the ratio level needs numbers",
    }[level]
    first = bad[0]
    raise CommandError(
        f"{file}, line {first + FIRST_ROW_LINE}: the value {texts.iloc[first]!r} is not a "
        f"number, and {why}."
    )


def refuse_repeated_ratings(file: Path, ratings: pd.DataFrame, *, unit: str, rater: str) -> None:
    repeated = ratings.duplicated(subset=[unit, rater], keep=False).to_numpy()
    if not repeated.any():
        return
    first = np.flatnonzero(repeated)[0]
    same = (ratings[unit] == ratings[unit].iloc[first]) & (
        ratings[rater] == ratings[rater].iloc[first]
    )
    lines = ", ".join(str(i + FIRST_ROW_LINE) for i in np.flatnonzero(same.to_numpy()))
    raise CommandError(
        f"{file}: rater {ratings[rater].iloc[first]!r} rated unit {ratings[unit].iloc[first]!r} "
        f"more than once (lines {lines}); alpha takes one rating per rater and unit."
    )


def unit_clusters(
    file: Path, ratings: pd.DataFrame, unit_labels: list, *, unit: str, cluster: str
) -> np.ndarray:
    """The cluster index of each unit, in the order of `unit_labels`; a unit is in one cluster."""
    pairs = ratings[[unit, cluster]].drop_duplicates()
    split = pairs[unit].duplicated(keep=False).to_numpy()
    if split.any():
        name = pairs[unit].iloc[np.flatnonzero(split)[0]]
        rows = ratings[ratings[unit] == name].drop_duplicates(subset=[cluster])
        where = ", ".join(  # the frame's index is the row's position in the file
            f"{label!r} on line {index + FIRST_ROW_LINE}"
            for index, label in zip(rows.index, rows[cluster], strict=True)
        )
        raise CommandError(
            f"{file}: unit {name!r} is in more than one cluster of column {cluster!r} ({where})."
        )
    codes, _clusters = pd.factorize(pairs[cluster])
    of_unit = dict(zip(pairs[unit], codes, strict=True))
    return np.array([of_unit[label] for label in unit_labels])
