"""Writing a ledger as CSV text that reads back exactly (:meth:`cogstats.Ledger.write`).

Private: the writer half of :mod:`cogstats.ledger._cells`, whose readers (the list-cell rule
table, covariate type inference) decide what a cell reads back as; every cell written is
checked against them.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cogstats._validation import LedgerError
from cogstats.ledger._cells import infer_csv_column, split_list_cell
from cogstats.ledger._columns import PROPENSITY_COLUMNS

__all__ = ["csv_text"]


def csv_text(
    run_ids: Sequence[str],
    scores: Sequence[float],
    fact_ids: Sequence[Sequence[str]],
    covariates: Mapping[str, Sequence[Any]],
    delimiter: str,
) -> str:
    """Return the CSV text of a ledger, every cell checked to read back exactly.

    Each list column is written space-separated when every cell of it reads back the same
    by the rule table, else ``;``-separated when that does, else as JSON lists (which
    always read back).  An empty ``eligible_ids``/``propensities`` list is ``[]`` (an
    empty cell there means "not logged").  Other cells are checked against the reader's
    rules (run ids and column names are stripped, covariate types are inferred, an empty
    cell is null); a value CSV cannot hold raises :class:`LedgerError` naming the column
    and the row, asking for JSON Lines or Parquet.
    """
    for name in ("run_id", "score", "fact_ids", *covariates):
        if name != name.strip() or _breaks_csv(name):
            raise _cannot_hold(f"the column name {name!r} would not read back", name, None)
    for i, run_id in enumerate(run_ids):
        if run_id != run_id.strip() or _breaks_csv(run_id):
            raise _cannot_hold(
                f"the run id {run_id!r} would not read back (CSV run ids are stripped)",
                "run_id",
                i + 1,
            )
    columns: dict[str, list[str]] = {"fact_ids": _list_cells(list(fact_ids), "fact_ids")}
    for name, values in covariates.items():
        if name in PROPENSITY_COLUMNS:
            columns[name] = _list_cells(list(values), name)
        else:
            columns[name] = _covariate_cells(name, list(values), run_ids)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(["run_id", "score", "fact_ids", *covariates])
    names = list(covariates)
    for i, run_id in enumerate(run_ids):
        row = [run_id, repr(float(scores[i])), columns["fact_ids"][i]]
        row.extend(columns[name][i] for name in names)
        writer.writerow(row)
    return buf.getvalue()


def _breaks_csv(text: str) -> bool:
    # a NUL makes the file binary; Python's csv writer leaves a lone carriage return
    # unquoted, and the reader then ends the row there
    return "\0" in text or "\r" in text


def _cannot_hold(problem: str, column: str, row: int | None) -> LedgerError:
    return LedgerError(
        f"CSV cannot hold this ledger exactly: {problem}; write JSON Lines (.jsonl) or "
        "Parquet instead",
        row=row,
        field=column,
    )


def _covariate_cells(name: str, values: list[Any], run_ids: Sequence[str]) -> list[str]:
    """Return a covariate's cells, checked to read back as the same values of the same type."""
    cells = ["" if v is None else repr(v) if isinstance(v, float) else str(v) for v in values]
    kinds = {type(v) for v in values if v is not None}
    as_float = float in kinds and kinds <= {int, float}  # the frame holds these as floats
    parse = infer_csv_column(cells)
    for i, (value, cell) in enumerate(zip(values, cells, strict=True)):
        back = parse(cell)
        if value is None:
            same = back is None
        elif as_float:
            same = type(back) is float and back == float(value)
        else:
            same = type(back) is type(value) and back == value
        if not same or _breaks_csv(cell):
            raise _cannot_hold(
                f"the column {name!r} holds {value!r} in run {run_ids[i]!r}, which would read "
                f"back as {back!r}",
                name,
                i + 1,
            )
    return cells


def _list_cells(values: list[Sequence[Any] | None], name: str) -> list[str]:
    numeric = name == "propensities"
    nullable = name != "fact_ids"

    def text(v: Sequence[Any]) -> list[str]:
        return [repr(float(x)) if numeric else str(x) for x in v]

    for joiner in (" ", ";"):
        cells = []
        for v in values:
            if v is None:
                cells.append("")
            elif nullable and len(v) == 0:
                cells.append("[]")
            else:
                cells.append(joiner.join(text(v)))
        if all(_reads_back(c, v, name) for c, v in zip(cells, values, strict=True)):
            return cells
    return [
        "" if v is None else json.dumps([float(x) if numeric else x for x in v], allow_nan=False)
        for v in values
    ]


def _reads_back(cell: str, value: Sequence[Any] | None, name: str) -> bool:
    if _breaks_csv(cell):  # JSON cells escape NUL and carriage returns
        return False
    try:
        back = split_list_cell(
            cell, name, 0, None, numeric=name == "propensities", nullable=name != "fact_ids"
        )
    except LedgerError:
        return False
    if value is None or back is None:
        return value is None and back is None
    if name == "propensities":
        return len(back) == len(value) and all(
            math.isclose(a, b, rel_tol=0.0, abs_tol=0.0) for a, b in zip(back, value, strict=True)
        )
    return list(back) == list(value)
