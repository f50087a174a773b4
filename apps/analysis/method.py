"""How each number of a report is made, against how the paper made it: the method panel.

Every table and figure of a report carries its `Method`s, written where the table is computed
from the same settings the computation uses (the ddof, the coders, the test, the prompt
versions), so that the panel cannot drift from the code. A report's runs add their own rows
(how answers were asked for, how they were graded, how proxies were asked). The panel is a
`Table` like any other: shown on the page, downloaded as CSV, served by the API's report
endpoints and written into a grading run's everything-archive.

Each row says whether this report's method is the paper's, a departure the researcher chose
(a prompt, a parameter, a pair of models), or Assay's choice where the paper is silent or
reports nothing (an interval, a correction, a table the paper does not have).
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from stats.points import MIN_POINTS

from .tables import Column, Table, table_csv_lines


class Fidelity(StrEnum):
    PAPER = "paper"
    CHOSEN = "chosen"
    OURS = "ours"

    @property
    def label(self) -> str:
        return FIDELITY_LABELS[self]


FIDELITY_LABELS = {
    Fidelity.PAPER: "The paper's method",
    Fidelity.CHOSEN: "Departs from the paper: the researcher's choice",
    Fidelity.OURS: "Assay's choice: the paper is silent",
}
NOT_REPORTED = "Not reported."


@dataclass(frozen=True)
class Method:
    """One statistic or setting: what the paper did, what this report did, and which of the
    two it is (`fidelity`); `settings` holds what this report did as data (coders, unit, ddof,
    prompt versions), for scripts and tests."""

    statistic: str
    paper: str
    ours: str
    fidelity: Fidelity
    settings: dict = field(default_factory=dict, compare=False)


METHOD_TABLE = "method"
EVERY_STATISTIC = "every statistic"
# The rule every report's statistics keep (stats/points.py): its panel's last row.
FEW_POINTS = Method(
    "Statistics over too few points",
    NOT_REPORTED,
    f"A correlation, test, alpha, kappa, accuracy or F1 over fewer than {MIN_POINTS} points "
    "is not shown: its cell says too few points, with n; the CSV and the API leave it empty.",
    Fidelity.OURS,
    settings={"min_points": MIN_POINTS},
)


def method_table(*, entries: list[tuple[str, Method]], n: str = "") -> Table:
    """The panel: one row per (table or figure name, method), in the report's order."""
    rows = [
        {
            "statistic": method.statistic,
            "where": where,
            "paper": method.paper,
            "ours": method.ours,
            "fidelity": method.fidelity.label,
            "fidelity_key": method.fidelity.value,  # for the page's badge; not a column
        }
        for where, method in entries
    ]
    return Table(
        name=METHOD_TABLE,
        title="How each number is made",
        columns=[
            Column("statistic", "Statistic or setting"),
            Column("where", "Table or figure"),
            Column("paper", "The paper"),
            Column("ours", "This report"),
            Column("fidelity", "Whose method"),
        ],
        rows=rows,
        notes=[
            "Built from the settings this report was computed with. “The paper's method”: as "
            "published. “Departs”: a choice the researcher made for this run or study. "
            "“Assay's choice”: the paper does not say, or does not report this."
        ],
        n=n,
    )


def departures(table: Table) -> int:
    """The panel's rows that depart from the paper by the researcher's choice."""
    return sum(1 for row in table.rows if row["fidelity_key"] == Fidelity.CHOSEN)


def report_entries(
    *, tables: dict[str, Table], figures: dict, runs: list[tuple[str, Method]]
) -> list[tuple[str, Method]]:
    """The runs' rows, then each table's and each figure's methods, in the report's order,
    then the rule for statistics over too few points."""
    entries = list(runs)
    seen = set()
    for name, table in [*tables.items(), *((n, f.table) for n, f in figures.items())]:
        if name in seen or name == METHOD_TABLE:
            continue
        seen.add(name)
        entries += [(name, method) for method in table.methods]
    return [*entries, (EVERY_STATISTIC, FEW_POINTS)]


def method_sheet_lines(run) -> Iterator[str]:
    """A grading run's benchmark report's method panel as CSV lines (formula-safe), for the
    run's everything-archive."""
    from .benchmark import benchmark_report_for

    yield from table_csv_lines(benchmark_report_for(run=run).tables[METHOD_TABLE])
