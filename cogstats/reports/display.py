"""What a published report page shows besides charts.

That is: tables, the summary block, and an interactive chart that works offline.

polars' own HTML table prints a dtype row, quotes every string and cuts long tables; a
report page wants none of that, so :func:`show_table` renders a frame as a plain HTML
table (numbers to a few significant digits, lists joined, every row, scrolling when
long).  :func:`summary_block` is the box at the top of a report: what was run and the
key numbers.  :func:`interactive_chart` embeds an altair chart with its parameters
(sliders, dropdowns) and the Vega JavaScript inlined, so the page needs no kernel and no
network.  All three return small frozen objects that render in a notebook
(``_repr_html_``); the report notebooks display them, they never build HTML themselves.
:func:`terminal_table` is the command line's counterpart: a frame as text that fits the
terminal, keeping the leading columns.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.ledger import escape_id

__all__ = [
    "InteractiveChart",
    "SummaryBlock",
    "Table",
    "interactive_chart",
    "show_table",
    "summary_block",
    "terminal_table",
]

_TABLE_STYLE = (
    "border-collapse:collapse;font-size:13px;font-family:system-ui,sans-serif;"
    "font-variant-numeric:tabular-nums"
)
_CELL = "padding:2px 10px;border-bottom:1px solid #e0e0e0;text-align:{align}"


def _cell(value: Any, digits: int) -> tuple[str, bool]:
    """Return a value as display text, and whether it is a number (right-aligned)."""
    if value is None:
        return "", False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, numbers.Integral):
        return f"{int(value):d}", True
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return "", True
        if math.isinf(x):
            return ("∞" if x > 0 else "−∞"), True
        return f"{x:.{digits}g}", True
    if isinstance(value, list | tuple | pl.Series):
        return ", ".join(_cell(v, digits)[0] for v in value), False
    return escape_id(str(value)), False


#: Raw expression or path -> what a reader sees in a table header.
_HEADERS = {
    "len": "count",
    "count": "count",
    "lessons.listed[0].effect": "lesson effect",
}


def _header(column: str) -> str:
    """Return a readable header for a column (no raw ``len``, dotted path or brackets)."""
    if column in _HEADERS:
        return _HEADERS[column]
    name = re.sub(r"\[\d+\]", "", column)
    if "." in name:
        name = name.split(".")[-1]
    return name.replace("_", " ")


@dataclass(frozen=True)
class Table:
    """A frame rendered for a report page (see :func:`show_table`)."""

    frame: pl.DataFrame
    caption: str | None = None
    digits: int = 4
    max_height: int = 420

    def to_frame(self) -> pl.DataFrame:
        """Return the frame shown."""
        return self.frame

    def summary(self) -> str:
        """One line: rows and columns."""
        return f"table of {self.frame.height} row(s): {', '.join(self.frame.columns)}"

    def _repr_html_(self) -> str:
        head = "".join(
            f'<th style="{_CELL.format(align="left")};border-bottom:2px solid #444">'
            f"{html.escape(escape_id(_header(c)))}</th>"
            for c in self.frame.columns
        )
        rows = []
        for row in self.frame.iter_rows():
            cells = []
            for v in row:
                text, numeric = _cell(v, self.digits)
                style = _CELL.format(align="right" if numeric else "left")
                cells.append(f'<td style="{style}">{html.escape(text)}</td>')
            rows.append(f"<tr>{''.join(cells)}</tr>")
        caption = (
            f'<caption style="text-align:left;font-weight:600;padding:4px 0">'
            f"{html.escape(self.caption)}</caption>"
            if self.caption
            else ""
        )
        note = f"{self.frame.height} row(s)"
        table = (
            f'<table class="cogstats-table" style="{_TABLE_STYLE}">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        scroll = "overflow-x:auto" + (
            f";max-height:{self.max_height}px;overflow-y:auto" if self.frame.height > 15 else ""
        )
        return (
            f'<div class="cogstats-table-wrap" style="{scroll}">{table}</div>'
            f'<div style="font-size:11px;color:#666">{note}</div>'
        )


def show_table(
    frame: pl.DataFrame,
    *,
    caption: str | None = None,
    digits: int = 4,
    max_height: int = 420,
) -> Table:
    """Show a frame as a plain HTML table: every row, no dtype row, no quotes.

    Parameters
    ----------
    frame : polars.DataFrame
        What to show (select and rename columns first; nothing is dropped here).
    caption : str, optional
        A caption above the table.
    digits : int
        Significant digits of floats (stored numbers are not rounded, only shown).
    max_height : int
        Tables longer than 15 rows scroll inside a box this many pixels high, so a long
        table is shown whole without pushing the rest of the page away.

    Returns
    -------
    Table
        Renders in a notebook (``_repr_html_``).

    Examples
    --------
    >>> import polars as pl
    >>> t = show_table(pl.DataFrame({"fact_id": ["a"], "estimate": [0.123456], "ok": [True]}))
    >>> page = t._repr_html_()
    >>> "0.1235" in page, "&quot;a&quot;" in page, "f64" in page, ">yes<" in page
    (True, False, False, True)
    >>> page = show_table(pl.DataFrame({"len": [3], "lessons.listed[0].effect": [0.1]}))
    >>> page = page._repr_html_()
    >>> ">count<" in page, ">lesson effect<" in page, ">len<" in page, "[0]" in page
    (True, True, False, False)
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError(f"frame must be a polars DataFrame; got {type(frame).__name__}")
    check_int("digits", digits, minimum=1)
    check_int("max_height", max_height, minimum=50)
    return Table(frame=frame, caption=caption, digits=digits, max_height=max_height)


@dataclass(frozen=True)
class SummaryBlock:
    """The box at the top of a report page (see :func:`summary_block`)."""

    what: str
    numbers: tuple[tuple[str, str], ...] = ()
    findings: tuple[str, ...] = ()

    def to_frame(self) -> pl.DataFrame:
        """Return the key numbers as rows (name, value)."""
        return pl.DataFrame(
            {"name": [k for k, _ in self.numbers], "value": [v for _, v in self.numbers]},
            schema={"name": pl.String, "value": pl.String},
        )

    def summary(self) -> str:
        """Return the block as plain text."""
        lines = [self.what, *(f"  {k}: {v}" for k, v in self.numbers)]
        lines += [f"- {f}" for f in self.findings]
        return "\n".join(lines)

    def __str__(self) -> str:
        """Return the block as plain text."""
        return self.summary()

    def _repr_html_(self) -> str:
        items = "".join(
            f'<div style="display:inline-block;margin:4px 18px 4px 0">'
            f'<div style="font-size:11px;color:#555">{html.escape(k)}</div>'
            f'<div style="font-size:18px;font-weight:600">{html.escape(v)}</div></div>'
            for k, v in self.numbers
        )
        findings = "".join(f"<li>{html.escape(f)}</li>" for f in self.findings)
        return (
            '<div class="cogstats-summary" style="border:1px solid #c8d3e0;'
            "background:#f5f8fb;border-radius:6px;padding:10px 14px;margin:8px 0;"
            'font-family:system-ui,sans-serif">'
            '<div style="font-weight:600;margin-bottom:4px">Summary</div>'
            f'<div style="margin-bottom:6px">{html.escape(self.what)}</div>'
            f"<div>{items}</div>"
            + (f'<ul style="margin:6px 0 0 0">{findings}</ul>' if findings else "")
            + "</div>"
        )


def summary_block(
    what: str,
    numbers: Mapping[str, Any] | None = None,
    findings: Sequence[str] = (),
    *,
    digits: int = 3,
) -> SummaryBlock:
    """Build the summary at the top of a report: what was run, the key numbers, the findings.

    Report notebooks tag the cell that displays it ``summary``;
    :func:`~cogstats.reports.run_report` moves that cell to the top of the exported page
    (right under the title), so the reader sees the result before the detail.

    Parameters
    ----------
    what : str
        One or two sentences: what was run on what.
    numbers : mapping, optional
        Key numbers, name -> value (floats shown to ``digits`` significant digits).
    findings : sequence of str
        Short statements (e.g. which lessons each gate evicts).
    digits : int
        Significant digits of float values.

    Examples
    --------
    >>> block = summary_block("Gate on 30 runs.", {"runs": 30, "mean score": 0.61234})
    >>> print(block)
    Gate on 30 runs.
      runs: 30
      mean score: 0.612
    """
    if not isinstance(what, str):
        raise ParameterError(f"what must be a string; got {type(what).__name__}")
    check_int("digits", digits, minimum=1)
    pairs = tuple((str(k), _cell(v, digits)[0]) for k, v in dict(numbers or {}).items())
    if isinstance(findings, str):
        raise ParameterError("findings must be a sequence of strings, not one string")
    return SummaryBlock(what=what, numbers=pairs, findings=tuple(str(f) for f in findings))


#: The interactive frame's style: the report's font, widgets in rows under the charts.
_FRAME_STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:13px;"
    "margin:0}"
    "html body #vis.vega-embed{display:block}"
    "html body #vis.vega-embed form.vega-bindings{display:flex;flex-wrap:wrap;gap:6px 28px;"
    "margin:10px 0 0 4px;font-family:inherit;font-size:13px}"
    ".vega-bind{display:flex;align-items:center;gap:6px}"
    ".vega-bind-name{font-weight:600;color:#333}"
    ".vega-bindings input,.vega-bindings select{font-family:inherit;font-size:13px}"
)


@dataclass(frozen=True)
class InteractiveChart:
    """An altair chart embedded with its JavaScript inlined (see :func:`interactive_chart`)."""

    page: str = field(repr=False)
    height: int = 600

    def summary(self) -> str:
        """Size of the embedded page."""
        return f"interactive chart: {len(self.page) / 1e6:.2f} MB of inline HTML/JavaScript"

    def _repr_html_(self) -> str:
        return (
            f'<iframe class="cogstats-interactive" title="interactive chart" '
            f'srcdoc="{html.escape(self.page, quote=True)}" '
            f'style="width:100%;height:{self.height}px;border:0" '
            'sandbox="allow-scripts"></iframe>'
        )


def interactive_chart(chart: Any, *, height: int = 600) -> InteractiveChart:
    """Embed an altair chart (parameters bound to widgets included) for an offline page.

    The chart is saved as a standalone HTML page with the Vega, Vega-Lite and
    vega-embed JavaScript inlined (altair's ``inline=True``, through vl-convert), rendered
    as SVG, and placed in an ``<iframe srcdoc=...>``: the exported report needs no
    kernel and loads nothing from the network.  About 1 MB per chart.  The frame's widgets
    (parameters bound to sliders and dropdowns) use the report's sans-serif font and sit
    in rows under the charts.

    Parameters
    ----------
    chart : altair chart
        Any top-level altair chart.
    height : int
        Height of the frame in pixels.

    Examples
    --------
    >>> import altair as alt, polars as pl
    >>> limit = alt.param(value=2, bind=alt.binding_range(min=1, max=3, step=1))
    >>> chart = (alt.Chart(pl.DataFrame({"x": [1, 2, 3]})).mark_bar().encode(x="x:Q")
    ...          .add_params(limit).transform_filter(alt.datum.x <= limit))
    >>> embedded = interactive_chart(chart, height=300)
    >>> frame = embedded._repr_html_()
    >>> frame.startswith("<iframe"), "cdn.jsdelivr" in embedded.page
    (True, False)
    >>> "font-family:system-ui" in embedded.page
    True
    """
    check_int("height", height, minimum=50)
    import io

    buffer = io.StringIO()
    chart.save(
        buffer, format="html", inline=True, embed_options={"renderer": "svg", "actions": False}
    )
    page = buffer.getvalue()
    # the page's font for the widgets too (not the browser's default serif), and the
    # widgets under the charts in rows (altair's page puts them beside the charts)
    # (at the top of the head: the inlined JavaScript further down may hold "</head>")
    page = page.replace("<head>", f"<head>\n<style>{_FRAME_STYLE}</style>", 1)
    return InteractiveChart(page=page, height=height)


def _text_width(frame: pl.DataFrame, max_rows: int) -> tuple[str, int]:
    from cogstats._results import CLI_TABLE_WIDTH, frame_text

    text = frame_text(frame, max_rows=max_rows, width=CLI_TABLE_WIDTH)
    return text, max((len(line) for line in text.splitlines()), default=0)


def terminal_table(
    frame: pl.DataFrame,
    *,
    width: int | None = None,
    wide: bool = False,
    max_rows: int = 200,
) -> str:
    """Return ``frame`` as a text table that fits ``width`` characters, or all of it.

    The leading columns are kept, in order, as many as fit (at least the first); the
    columns left out are named on a last line with the way to see them all (``--format
    wide``).  A gate report's leading columns are the ones every gate shares (fact_id,
    decision, reason, why, trials, estimate, std_error, baseline_runs); the gate's own
    columns come after them and are the first to go.

    Parameters
    ----------
    frame : polars.DataFrame
        The table.
    width : int, optional
        Characters available; default: the terminal's width
        (:func:`shutil.get_terminal_size`: ``COLUMNS`` or the terminal, 80 when output
        is not a terminal).
    wide : bool
        Every column, however wide (``--format wide``).
    max_rows : int
        Rows shown (>= 1).

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"fact_id": ["a", "b"], "decision": ["hold", "evict"],
    ...                   "a_long_column_name": [1.5, 2.25], "another_one": [1, 2]})
    >>> print(terminal_table(t, width=40))
    ┌─────────┬──────────┐
    │ fact_id ┆ decision │
    ╞═════════╪══════════╡
    │ a       ┆ hold     │
    │ b       ┆ evict    │
    └─────────┴──────────┘
    2 more columns: a_long_column_name,
    another_one (--format wide shows every
    column)
    >>> len(terminal_table(t, wide=True).splitlines()[0]) > 40
    True
    """
    import shutil
    import textwrap

    rows = int(check_int("max_rows", max_rows, minimum=1))  # type: ignore[arg-type]
    if width is None:
        width = shutil.get_terminal_size((80, 24)).columns
    avail = int(check_int("width", width, minimum=1))  # type: ignore[arg-type]
    text, used = _text_width(frame, rows)
    if wide or used <= avail or frame.width <= 1:
        return text
    columns = frame.columns
    kept = 1
    best = _text_width(frame.select(columns[:1]), rows)[0]
    # add leading columns while the table fits (each render is one small frame)
    for k in range(2, len(columns)):
        candidate, used = _text_width(frame.select(columns[:k]), rows)
        if used > avail:
            break
        kept, best = k, candidate
    dropped = columns[kept:]
    names = ", ".join(map(escape_id, dropped))
    note = f"{len(dropped)} more column{'s' if len(dropped) > 1 else ''}: {names}"
    note = "\n".join(textwrap.wrap(f"{note} (--format wide shows every column)", avail))
    return f"{best}\n{note}"
