"""CSV output that a spreadsheet cannot run: formula cells neutralised (the OWASP rule).

Every CSV *output* of cogstats (``cogstats gate``/``attribute --format csv``, the ledger
audit's tables, a simulation's ``summary.csv``) goes through :func:`write_csv`.  A string
cell (a lesson id, a reason, a "why") that starts with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return is written with a leading ``'``, so Excel, LibreOffice and Google
Sheets show it as text instead of evaluating it (OWASP, "CSV Injection").  Column names
get the same treatment.  Numbers, booleans and nulls are never touched, and neither are
ledger files (:meth:`cogstats.Ledger.write` writes data to be read back exactly, not a
report).  ``raw=True`` (on the command line ``--raw-csv``) writes every cell as it is.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

__all__ = ["FORMULA_STARTS", "neutralise", "neutralise_text", "write_csv"]

#: First characters that make a spreadsheet cell a formula (or hide one).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PATTERN = r"^[=+\-@\t\r]"


def neutralise_text(text: str) -> str:
    """Return ``text`` with a leading ``'`` when it starts like a formula.

    Examples
    --------
    >>> neutralise_text("=HYPERLINK(1)"), neutralise_text("L1")
    ("'=HYPERLINK(1)", 'L1')
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def neutralise(frame: pl.DataFrame) -> pl.DataFrame:
    """Return ``frame`` with its string (and categorical) cells and names neutralised.

    Examples
    --------
    >>> frame = pl.DataFrame({"fact_id": ["=1+1", "@SUM(A1)", "ok", None], "lift": [-1.0, 0, 1, 2]})
    >>> neutralise(frame).rows()[:3]
    [("'=1+1", -1.0), ("'@SUM(A1)", 0.0), ('ok', 1.0)]
    """
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum):
            col = pl.col(name).cast(pl.String)
            exprs.append(
                pl.when(col.str.contains(_PATTERN))
                .then(pl.lit("'") + col)
                .otherwise(col)
                .alias(name)
            )
    out = frame.with_columns(exprs) if exprs else frame
    renames = {n: neutralise_text(n) for n in out.columns if n.startswith(FORMULA_STARTS)}
    return out.rename(renames) if renames else out


def write_csv(frame: pl.DataFrame, path: str | Path | None = None, *, raw: bool = False) -> str:
    r"""Write ``frame`` as CSV with formula cells neutralised (unless ``raw``); return the text.

    Parameters
    ----------
    frame : polars.DataFrame
        A flat frame (list columns joined beforehand).
    path : str or Path, optional
        Where to write; the text is returned either way.
    raw : bool
        Write every cell as it is (no ``'`` prefix).

    Examples
    --------
    >>> write_csv(pl.DataFrame({"fact_id": ["-cmd", "a"], "trials": [3, -4]}))
    "fact_id,trials\n'-cmd,3\na,-4\n"
    >>> write_csv(pl.DataFrame({"fact_id": ["-cmd"]}), raw=True)
    'fact_id\n-cmd\n'
    """
    text = (frame if raw else neutralise(frame)).write_csv()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
