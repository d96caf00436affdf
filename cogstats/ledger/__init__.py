"""The ledger of run outcomes, its files, and the lesson table beside it.

Everything a run passes through on its way in or out, in one package:

* :class:`Ledger` -- the runs (``run_id``, ``score`` in [0, 1], ``fact_ids``, covariates)
  and the per-lesson questions every estimator and gate asks; :class:`Baseline`,
  :class:`InclusionDesign`;
* :func:`validate_record` -- the one door every run passes (``Ledger.read``,
  ``from_records``, ``record``, the streaming gate, state files); :func:`value_kind`,
  :func:`column_kind`, :func:`warn_repeated`;
* the readers and writers per format (JSON Lines, CSV/TSV, Parquet, cycgraph's JSON;
  :meth:`Ledger.read`, :meth:`Ledger.write`), with :func:`check_columns`, the one check of
  a ``{ledger name: file name}`` column mapping that every caller uses;
* the lesson table (:func:`lesson_table`, :func:`live_lessons`, :meth:`Ledger.read_lessons`;
  :mod:`cogstats.lessons` is its documented face);
* the bounded JSON parser (:func:`load_json`, :func:`check_json_limits`,
  :func:`parse_json_record`) the readers, state files and ingestion use;
* :func:`write_csv` -- CSV *output* with formula cells neutralised (reports, the command
  line), not ledger files;
* :func:`escape_id` / :func:`escape_ids` -- an id (and any text) as every table, chart and
  terminal shows it: control, invisible and look-alike characters made visible;
* :func:`ascii_float` / :func:`ascii_int` -- numbers in ASCII decimal notation only, as the
  readers and the command line take them;

The package imports only the standard library, numpy, scipy and polars.

Examples
--------
>>> from cogstats.ledger import Ledger, check_columns
>>> Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a"]}])
Ledger(runs=1, facts=1, covariates=[])
>>> check_columns({"run_id": "run"})
{'run_id': 'run'}
"""

from __future__ import annotations

from cogstats._results import escape_id, escape_ids
from cogstats.ledger._cells import ascii_float, ascii_int
from cogstats.ledger._columns import (
    FORMATS,
    PROPENSITY_COLUMNS,
    REQUIRED_COLUMNS,
    LedgerFormat,
    check_columns,
)
from cogstats.ledger._json import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    JsonLimitError,
    check_json_limits,
    load_json,
    parse_json_record,
)
from cogstats.ledger._ledger import Baseline, InclusionDesign, Ledger
from cogstats.ledger._lessons import LINEAGE_COLUMNS, lesson_table, live_lessons
from cogstats.ledger._records import column_kind, validate_record, value_kind, warn_repeated
from cogstats.ledger._safe_csv import FORMULA_STARTS, neutralise, neutralise_text, write_csv

__all__ = [
    "FORMATS",
    "FORMULA_STARTS",
    "LINEAGE_COLUMNS",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "PROPENSITY_COLUMNS",
    "REQUIRED_COLUMNS",
    "Baseline",
    "InclusionDesign",
    "JsonLimitError",
    "Ledger",
    "LedgerFormat",
    "ascii_float",
    "ascii_int",
    "check_columns",
    "check_json_limits",
    "column_kind",
    "escape_id",
    "escape_ids",
    "lesson_table",
    "live_lessons",
    "load_json",
    "neutralise",
    "neutralise_text",
    "parse_json_record",
    "validate_record",
    "value_kind",
    "warn_repeated",
    "write_csv",
]
