"""A report figure: its data as a `Table` (shown beside the plot and downloaded as CSV) and
the function that draws it as SVG (apps/analysis/plots.py).

`svg` is called only when the figure is served, so that matplotlib is imported only by a
request that draws. A report that is cached holds its figures as `functools.partial` of a
plot function over plain data, which pickles; a lambda would not.
"""

from collections.abc import Callable
from dataclasses import dataclass

from .tables import Table


@dataclass
class Figure:
    table: Table
    svg: Callable[[], str]  # draws the plot (matplotlib is imported only when one is drawn)
