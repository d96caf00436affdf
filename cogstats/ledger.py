"""The ledger of run outcomes: which lessons went into each run, and how the run scored.

A :class:`Ledger` holds one row per run (``run_id``, ``score`` in [0, 1], ``fact_ids``,
then optional covariates such as a difficulty proxy, a task family, or the logged
injection propensities ``eligible_ids``/``propensities``).  It validates everything at
the door, reads and writes JSON Lines, CSV/TSV, Parquet and cycgraph's JSON, and answers
the per-lesson questions every estimator and gate asks: trials, mean score, sample
variance, the leave-one-fact-out baseline, and the sparse run x lesson inclusion design.

Semantics follow cycgraph's ``InMemoryOutcomeLedger``: recording a ``run_id`` again
replaces the earlier outcome in place; a lesson id listed twice in one run counts once
(the stored ``fact_ids`` keep the duplicate, as cycgraph's stored outcome does, and the
ledger warns with :class:`~cogstats._validation.LedgerWarning`); the baseline of a lesson
is every recorded run that does not contain it.  Means are accumulated in run order, as
cycgraph does, so point-estimate ties (``0.55 - 0.50 >= 0.05``) come out the same.
Lesson ids are NFC-normalised on the way in (``unicodedata.normalize``), so ids that look
the same are one lesson.
"""

from __future__ import annotations

import json
import math
import numbers
import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats import _ledger_io
from cogstats._ledger_io import (  # FORMATS and PROPENSITY_COLUMNS are re-exported
    FORMATS,  # noqa: F401
    PROPENSITY_COLUMNS,  # noqa: F401
    REQUIRED_COLUMNS,
    LedgerFormat,
    parse_json_record,  # noqa: F401  (the streaming gate reads JSON Lines as the ledger)
)
from cogstats.stats import groups as _ledger_stats

if TYPE_CHECKING:  # scipy.sparse loads with the first design (0.2 s off every start-up)
    from scipy import sparse
from cogstats._results import frame_text
from cogstats._validation import LedgerError, LedgerWarning, ParameterError

__all__ = ["Baseline", "InclusionDesign", "Ledger"]


@dataclass(frozen=True)
class Baseline:
    """Aggregate of the runs in a baseline.

    Attributes
    ----------
    runs : int
        Number of runs.
    mean_score : float
        Their mean score (0.0 when ``runs`` is 0, as in cycgraph).
    variance : float or None
        Sample variance (n - 1 denominator); ``None`` below 2 runs.
    """

    runs: int
    mean_score: float
    variance: float | None


@dataclass(frozen=True)
class InclusionDesign:
    """The run x lesson inclusion design of a ledger.

    Attributes
    ----------
    matrix : scipy.sparse.csr_array
        ``(n_runs, n_facts)`` float64 matrix with 1.0 where the lesson was injected into
        the run (a duplicate id inside one run counts once).
    fact_ids : tuple of str
        Column labels, in order of first appearance in the ledger.
    run_ids : tuple of str
        Row labels, in ledger order.
    """

    matrix: sparse.csr_array
    fact_ids: tuple[str, ...]
    run_ids: tuple[str, ...]

    def dense(self) -> np.ndarray:
        """Return the inclusion matrix as a dense ``(n_runs, n_facts)`` float64 array."""
        return np.asarray(self.matrix.toarray(), dtype=np.float64)

    def column(self, fact_id: str) -> np.ndarray:
        """Boolean inclusion vector of one lesson over the runs."""
        try:
            j = self.fact_ids.index(fact_id)
        except ValueError:
            return np.zeros(len(self.run_ids), dtype=bool)
        col = self.matrix[:, [j]].toarray().ravel()
        return np.asarray(col > 0, dtype=bool)


class Ledger:
    """Run outcomes with the lessons injected into each run.

    Build one with :meth:`from_records`, :meth:`from_frame` or :meth:`read`; add runs with
    :meth:`record`.  The ledger keeps runs in the order they were recorded.

    Parameters
    ----------
    records : iterable of mappings, optional
        Same as :meth:`from_records`.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
    ...     {"run_id": "r2", "score": 0.5, "fact_ids": []},
    ...     {"run_id": "r3", "score": 0.7, "fact_ids": ["a", "b"]},
    ... ])
    >>> ledger.fact_stats().select("fact_id", "trials", "mean_score").rows()
    [('a', 2, 0.8), ('b', 1, 0.7)]
    >>> ledger.baseline(exclude="a")
    Baseline(runs=1, mean_score=0.5, variance=None)
    >>> ledger.record("r2", 0.6, ["b"])  # same run_id: replaced in place
    >>> len(ledger), ledger.baseline(exclude="a").mean_score
    (3, 0.6)
    """

    __slots__ = ("_cache", "_covariates", "_fact_ids", "_index", "_run_ids", "_scores")

    def __init__(self, records: Iterable[Mapping[str, Any]] | None = None) -> None:
        self._run_ids: list[str] = []
        self._scores: list[float] = []
        self._fact_ids: list[list[str]] = []
        self._covariates: dict[str, list[Any]] = {}
        self._index: dict[str, int] = {}
        self._cache: dict[str, Any] = {}
        if records is not None:
            self._extend(records, source=None, fact_ids_required=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any]], *, source: str | None = None
    ) -> Ledger:
        """Build a ledger from mappings with ``run_id``, ``score`` and ``fact_ids``.

        Every other key becomes a covariate column.  ``fact_ids`` may be omitted (an empty
        run), as in cycgraph's ``RunOutcome`` schema.  A ``run_id`` that appears twice in
        ``records`` is an error (use :meth:`record` to replace a run on purpose).

        Raises
        ------
        LedgerError
            Naming the 1-based row and the field of the first malformed record.

        Examples
        --------
        >>> Ledger.from_records([{"run_id": "r1", "score": 1.0, "fact_ids": ["x"]}])
        Ledger(runs=1, facts=1, covariates=[])
        """
        ledger = cls()
        ledger._extend(records, source=source, fact_ids_required=False)
        return ledger

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, *, source: str | None = None) -> Ledger:
        """Build a ledger from a polars frame with at least ``run_id``, ``score``, ``fact_ids``.

        Examples
        --------
        >>> import polars as pl
        >>> frame = pl.DataFrame({"run_id": ["r1"], "score": [0.5], "fact_ids": [["a"]]})
        >>> Ledger.from_frame(frame).fact_stats()["trials"].to_list()
        [1]
        """
        if not isinstance(frame, pl.DataFrame):
            raise ParameterError(f"frame must be a polars DataFrame; got {type(frame).__name__}")
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise _ledger_io.missing_columns_error(missing, frame.columns, source, {})
        ledger = cls()
        ledger._extend(frame.iter_rows(named=True), source=source, fact_ids_required=True)
        return ledger

    @classmethod
    def read(
        cls,
        path: str | Path,
        *,
        format: LedgerFormat | None = None,
        columns: Mapping[str, str] | None = None,
        delimiter: str | None = None,
    ) -> Ledger:
        r"""Read a ledger file: JSON Lines, CSV/TSV, Parquet or cycgraph's JSON.

        Parameters
        ----------
        path : str or Path
            The file.
        format : {"jsonl", "csv", "parquet", "cycgraph-json"}, optional
            Inferred from the suffix when omitted (``.jsonl``/``.ndjson``, ``.csv``,
            ``.tsv`` (CSV with tabs), ``.parquet``/``.pq``, ``.json``).  cycgraph JSON is
            either a list of ``RunOutcome`` records or an object whose ``runs`` array
            holds them.
        columns : mapping of str to str, optional
            The file's names for ledger columns, ``{ledger name: file name}``, e.g.
            ``{"run_id": "run", "fact_ids": "lessons_in_prompt"}``; CSV/Parquet columns
            and JSON keys alike (on the command line ``--column run_id=run``).  Mapping
            to a column the file lacks, two names onto one column, or onto a name the
            file already uses is an error.
        delimiter : str, optional
            CSV only: the one-character field delimiter.  By default ``.tsv`` files are
            tab-separated and other CSV files are sniffed (``csv.Sniffer`` on the header
            line, among ``,``, tab, ``;`` and ``|``); a header that holds none of them,
            or more than one, is an error asking for ``delimiter=``.

        Returns
        -------
        Ledger

        Raises
        ------
        LedgerError
            Naming the file, the row (1-based data row of a CSV file, the line of a JSON
            Lines file, the position of a run in cycgraph JSON or Parquet) and the field
            of the first malformed record; an encoding problem names the byte offset.
            Nothing is silently dropped.
        ParameterError
            For invalid ``format``, ``columns`` or ``delimiter``, or a mapping that does
            not fit the file.

        Warns
        -----
        LedgerWarning
            When a run lists a lesson twice (it counts once; the stored ``fact_ids`` keep
            the duplicate, as cycgraph's stored outcome does); when a CSV file splits some
            ``fact_ids`` cells on ``;`` and another on whitespace (a single id with a
            space, ``"tip 3"``, reads as two lessons: end such a cell with ``;``).

        Notes
        -----
        **Text.**  Files are UTF-8; a byte-order mark is dropped.  Other encodings
        (UTF-16, latin-1, ...) and binary data are errors naming the byte offset.  Lines
        may end in ``\n`` or ``\r\n``.

        **CSV.**  The first non-blank line is the header; blank lines (also rows of
        empty cells) are skipped, quoted cells may hold the delimiter, quotes and line
        breaks, and a header-only file is an empty ledger.  ``run_id`` cells are always
        read as strings (``7`` is the run ``"7"``), stripped of surrounding whitespace;
        other columns become covariates of the narrowest type all their cells parse as
        (integer, float, boolean ``true``/``false``, else string; an empty cell is null).
        ``fact_ids``, ``eligible_ids`` and ``propensities`` cells follow one rule table,
        applied to the stripped cell:

        =============================  ==========================================
        the cell                       read as
        =============================  ==========================================
        empty                          no lessons (``fact_ids``); not logged
                                       (null) in ``eligible_ids``/``propensities``
        starts with ``[``              a list: JSON (``["a", "b"]``) or the Python
                                       literal pandas writes (``['a', 'b']``, read
                                       with ``ast.literal_eval``, never ``eval``),
                                       elements as written
        holds ``;``                    split on ``;`` (ids may hold spaces)
        holds ``,``                    split on ``,`` (``"a, b"`` is a and b)
        anything else                  split on whitespace
        =============================  ==========================================

        Split pieces are stripped and empty pieces dropped.  A bracketed cell must be a
        flat list of strings (numbers for ``propensities``), else the error names the
        row and field.

        **JSON Lines, JSON and Parquet** are typed, and read strictly: ``run_id`` must be
        a string, ``score`` a number, ``fact_ids`` a list of strings (or missing or null
        in JSON: no lessons); anything else is an error naming the row and field.

        **Lesson ids** are NFC-normalised (``unicodedata.normalize("NFC", id)``), so an
        id typed with a combining accent and one with the precomposed letter are one
        lesson.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
        >>> _ = path.write_text("run_id,score,fact_ids\nr1,0.9,a b\nr2,0.4,\n")
        >>> Ledger.read(path).fact_stats()["fact_id"].to_list()
        ['a', 'b']

        A file with its own column names, tab-separated, with pandas-written list cells:

        >>> path = pathlib.Path(tempfile.mkdtemp()) / "demo.tsv"
        >>> _ = path.write_text("run\tscore\tlessons\n1\t0.9\t['a', 'b']\n2\t0.4\t[]\n")
        >>> ledger = Ledger.read(path, columns={"run_id": "run", "fact_ids": "lessons"})
        >>> ledger.run_ids, ledger.fact_ids
        (('1', '2'), ('a', 'b'))
        """
        path = Path(path)
        fmt, implied = _ledger_io.resolve_format(path, format)
        mapping = _ledger_io.check_columns(columns)
        delim = _ledger_io.check_delimiter(delimiter, fmt)
        if not path.exists():
            raise FileNotFoundError(f"ledger file not found: {path}")
        if path.is_dir():
            raise ParameterError(f"path must be a ledger file; {path} is a directory")
        src = str(path)
        ledger = cls()
        try:
            records, rows, required = _ledger_io.read_records(
                path, fmt, mapping=mapping, delimiter=delim if delim is not None else implied
            )
            ledger._extend(records, source=src, fact_ids_required=required, row_numbers=rows)
        except LedgerError as exc:
            if exc.field in mapping and exc.field != mapping[exc.field]:
                raise LedgerError(
                    f"{exc.message} (the file's column {mapping[exc.field]!r})",
                    row=exc.row,
                    field=exc.field,
                    source=exc.source,
                ) from None
            raise
        return ledger

    @staticmethod
    def read_lessons(
        path: str | Path,
        *,
        format: LedgerFormat | None = None,
        columns: Mapping[str, str] | None = None,
        delimiter: str | None = None,
    ) -> pl.DataFrame:
        r"""Read the lesson table that sits beside a ledger (a store's lessons and lineage).

        Parameters
        ----------
        path : str or Path
            CSV/TSV, JSON Lines, JSON (a list of lesson objects, or ``{"lessons": [...]}``)
            or Parquet, by suffix as :meth:`read` (``.json`` is the JSON list here).
        format : {"jsonl", "csv", "parquet", "cycgraph-json"}, optional
            Inferred from the suffix when omitted ("cycgraph-json" is the JSON list).
        columns : mapping of str to str, optional
            The file's names for the table's columns, ``{table name: file name}``, e.g.
            ``{"id": "lesson", "consolidated_from": "parents"}``.
        delimiter : str, optional
            CSV only, as :meth:`read`.

        Returns
        -------
        polars.DataFrame
            The validated table (:func:`cogstats.lessons.lesson_table`): ``id``,
            ``created_at``, ``status`` (null counts as verified) and, when the file has
            them, ``consolidated_from`` and ``supersedes`` (lists of lesson ids), then
            any other columns.

        Raises
        ------
        LedgerError
            Naming the file, the row and the field of the first malformed lesson; the
            encoding checks are those of :meth:`read`.

        Notes
        -----
        CSV cells of ``consolidated_from`` and ``supersedes`` follow the ``fact_ids``
        rule table of :meth:`read` (``"a;b"``, ``"a b"``, ``["a", "b"]``; an empty cell
        is null: no lineage), and an empty ``status`` is null.  Lesson ids are
        NFC-normalised, as the ledger's are.  On the command line:
        ``cogstats gate LEDGER --lessons FILE``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lessons.csv"
        >>> _ = path.write_text(
        ...     "id,created_at,status,consolidated_from\n"
        ...     "P1,1,evicted,\nP2,2,candidate,P1\nL1,3,,\n"
        ... )
        >>> table = Ledger.read_lessons(path)
        >>> table.select("id", "status", "consolidated_from").rows()
        [('P1', 'evicted', None), ('P2', 'candidate', ['P1']), ('L1', None, None)]
        """
        from cogstats.lessons import lesson_table

        path = Path(path)
        fmt, implied = _ledger_io.resolve_format(path, format)
        mapping = _ledger_io.check_columns(columns)
        delim = _ledger_io.check_delimiter(delimiter, fmt)
        if not path.exists():
            raise FileNotFoundError(f"lesson table file not found: {path}")
        if path.is_dir():
            raise ParameterError(f"path must be a lesson table file; {path} is a directory")
        frame, rows = _ledger_io.read_lesson_frame(
            path, fmt, mapping=mapping, delimiter=delim if delim is not None else implied
        )
        try:
            return lesson_table(frame)
        except LedgerError as exc:
            row = rows[exc.row - 1] if exc.row is not None and exc.row <= len(rows) else exc.row
            raise LedgerError(exc.message, row=row, field=exc.field, source=str(path)) from None

    def write(self, path: str | Path, *, format: LedgerFormat | None = None) -> Path:
        """Write the ledger; the format is inferred from the suffix unless given.

        Round trips through :meth:`read` preserve run order, scores (exactly), fact ids
        and covariates.  CSV (``.tsv``: tab-separated) writes each list column in the
        first form of :meth:`read`'s rule table that reads back exactly: ids separated
        by spaces, else by ``;``, else JSON list cells.  Every other cell is checked
        against the reader's rules before the file is written, and a ledger CSV cannot
        hold exactly (e.g. a string covariate whose values all look like numbers, or a
        run id with surrounding spaces) raises :class:`LedgerError` naming the column
        and row, asking for JSON Lines or Parquet.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.25, "fact_ids": ["a"]}])
        >>> path = ledger.write(pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl")
        >>> Ledger.read(path).frame.equals(ledger.frame)
        True
        >>> odd = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a b; c"]}])
        >>> path = odd.write(pathlib.Path(tempfile.mkdtemp()) / "runs.csv")
        >>> path.read_text().splitlines()[1]
        'r1,0.5,"[""a b; c""]"'
        >>> Ledger.read(path).fact_ids
        ('a b; c',)
        """
        path = Path(path)
        fmt, implied = _ledger_io.resolve_format(path, format)
        text: str
        if fmt == "parquet":
            path.parent.mkdir(parents=True, exist_ok=True)
            self.frame.write_parquet(path)
            return path
        if fmt == "jsonl":
            text = "".join(json.dumps(rec, allow_nan=False) + "\n" for rec in self.to_records())
        elif fmt == "cycgraph-json":
            text = json.dumps({"runs": self.to_records()}, indent=1, allow_nan=False)
        else:
            text = self._csv_text(implied or ",")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates from a JSON "\\ud800" escape
            bad = text[exc.start : exc.end]
            raise LedgerError(
                f"cannot encode the ledger as UTF-8 ({exc.reason}: {bad!r})",
                source=str(path),
            ) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def _csv_text(self, delimiter: str) -> str:
        """Return the ledger as CSV text, every cell checked to read back (see :meth:`write`)."""
        return _ledger_io.csv_text(
            self._run_ids, self._scores, self._fact_ids, self._covariates, delimiter
        )

    # ------------------------------------------------------------------ mutation
    def record(
        self,
        run_id: str,
        score: float,
        fact_ids: Sequence[str] = (),
        **covariates: Any,
    ) -> None:
        """Record one run outcome; recording a ``run_id`` again replaces it in place.

        Examples
        --------
        >>> ledger = Ledger()
        >>> ledger.record("r1", 0.8, ["a"], difficulty=0.1)
        >>> ledger.record("r1", 0.6, ["a"], difficulty=0.2)
        >>> ledger.frame.select("run_id", "score", "difficulty").rows()
        [('r1', 0.6, 0.2)]
        """
        row = {"run_id": run_id, "score": score, "fact_ids": list(fact_ids), **covariates}
        self._extend([row], source=None, fact_ids_required=False, replace=True)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        """Return the number of runs."""
        return len(self._run_ids)

    def __repr__(self) -> str:
        """Return a short text form."""
        return (
            f"Ledger(runs={len(self)}, facts={len(self.fact_ids)}, covariates={self.covariates!r})"
        )

    def _repr_html_(self) -> str:
        head = f"<strong>{self!r}</strong>"
        with pl.Config(tbl_rows=20):
            return f"<div>{head}{self.frame._repr_html_()}</div>"

    @property
    def run_ids(self) -> tuple[str, ...]:
        """Run ids in ledger order."""
        return tuple(self._run_ids)

    @property
    def scores(self) -> np.ndarray:
        """Scores as a float64 array in ledger order (a copy)."""
        return np.asarray(self._scores, dtype=np.float64)

    @property
    def fact_ids(self) -> tuple[str, ...]:
        """Distinct lesson ids in order of first appearance."""
        return self._facts_index()[0]

    @property
    def covariates(self) -> list[str]:
        """Names of the covariate columns (everything but run_id, score, fact_ids)."""
        return list(self._covariates)

    def covariate(self, name: str) -> pl.Series:
        """One covariate column as a polars Series.

        Raises
        ------
        ParameterError
            When the ledger has no such covariate (the message lists those it has).
        """
        if name not in self._covariates:
            raise ParameterError(
                f"covariate {name!r} is not in the ledger; it has {self.covariates!r}"
            )
        cached = self._cache.get("frame")
        if cached is not None:
            return cached[name]
        # one column, without building the whole frame (its list column is slow at scale)
        return _covariate_series(name, self._covariates[name])

    @property
    def frame(self) -> pl.DataFrame:
        """The ledger as a polars frame: run_id, score, fact_ids, then covariates."""
        cached = self._cache.get("frame")
        if cached is None:
            data: dict[str, Any] = {
                "run_id": pl.Series("run_id", self._run_ids, dtype=pl.String),
                "score": pl.Series("score", self._scores, dtype=pl.Float64),
                "fact_ids": pl.Series("fact_ids", self._fact_ids, dtype=pl.List(pl.String)),
            }
            for name, values in self._covariates.items():
                data[name] = _covariate_series(name, values)
            cached = pl.DataFrame(data)
            self._cache["frame"] = cached
        return cached

    def to_frame(self) -> pl.DataFrame:
        """Return :attr:`frame` (the house-wide spelling)."""
        return self.frame

    def to_records(self) -> list[dict[str, Any]]:
        """Return the runs as a list of plain dicts (JSON-ready)."""
        return [dict(row) for row in self.frame.iter_rows(named=True)]

    def summary(self) -> str:
        """Return a text table of per-lesson statistics with their leave-one-out baselines."""
        stats = self.fact_stats().join(self.baselines(), on="fact_id", how="left")
        return f"{self!r}\n{frame_text(stats)}"

    # ------------------------------------------------------------------ statistics
    # Every statistic below comes from additive per-lesson statistics over the
    # deduplicated (run, lesson) inclusion pairs (cogstats._ledger_stats): the cost is in
    # runs x lessons-per-run plus lessons, never runs x lessons.
    def design(self, fact_ids: Sequence[str] | None = None) -> InclusionDesign:
        """Return the sparse run x lesson inclusion design.

        Parameters
        ----------
        fact_ids : sequence of str, optional
            Columns to build, in this order (a lesson absent from the ledger gives an all
            zero column).  Default: every lesson, in order of first appearance.

        Notes
        -----
        Cost: O(runs x lessons-per-run) time and memory (a CSR array built once from the
        cached inclusion index; a column subset is a CSC slice).

        Examples
        --------
        >>> ledger = Ledger.from_records([
        ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "a"]},
        ...     {"run_id": "r2", "score": 0.5, "fact_ids": ["b"]},
        ... ])
        >>> ledger.design().dense().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        from scipy import sparse

        all_ids, rows, cols = self._facts_index()
        base = self._cache.get("design")
        if base is None:
            data = np.ones(len(rows), dtype=np.float64)
            # the index is deduplicated and in run order: CSR directly, no sorting
            indptr = np.zeros(len(self) + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=len(self)), out=indptr[1:])
            mat = sparse.csr_array(
                (data, cols.copy(), indptr), shape=(len(self), len(all_ids)), dtype=np.float64
            )
            mat.sort_indices()  # canonical CSR (the index keeps each run's listed order)
            base = InclusionDesign(matrix=mat, fact_ids=all_ids, run_ids=self.run_ids)
            self._cache["design"] = base
        if fact_ids is None:
            return base
        wanted = tuple(fact_ids)
        pos = self._cache["fact_pos"]
        take = np.array([pos.get(f, -1) for f in wanted], dtype=np.int64)
        csc = base.matrix.tocsc()
        if take.size and (take >= 0).all():
            mat = sparse.csr_array(csc[:, take])
        else:
            empty = sparse.csc_array((len(self), 1), dtype=np.float64)
            blocks = [csc[:, [j]] if j >= 0 else empty for j in take.tolist()]
            mat = (
                sparse.csr_array(sparse.hstack(blocks, format="csr"))
                if blocks
                else sparse.csr_array((len(self), 0))
            )
        return InclusionDesign(matrix=mat, fact_ids=wanted, run_ids=self.run_ids)

    def fact_stats(self) -> pl.DataFrame:
        """Per-lesson trials, mean score and sample variance.

        Returns
        -------
        polars.DataFrame
            Columns ``fact_id``, ``trials`` (runs containing the lesson; a duplicate id in
            one run counts once), ``mean_score`` (accumulated in run order),
            ``variance`` (n - 1 denominator; null below 2 trials).  Lessons in order of
            first appearance.

        Notes
        -----
        Cost: O(runs x lessons-per-run + lessons) time and memory (``np.bincount`` over the
        inclusion pairs); cached until the ledger changes.

        Examples
        --------
        >>> ledger = Ledger.from_records([
        ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
        ...     {"run_id": "r2", "score": 0.7, "fact_ids": ["a"]},
        ... ])
        >>> row = ledger.fact_stats().row(0, named=True)
        >>> row["trials"], round(row["mean_score"], 12), round(row["variance"], 12)
        (2, 0.8, 0.02)
        """
        cached = self._cache.get("fact_stats")
        if cached is not None:
            return cached
        fa = self._fact_arrays()
        trials = fa.trials
        with np.errstate(invalid="ignore", divide="ignore"):
            variances = np.where(trials > 1, fa.ss / np.maximum(trials - 1, 1), np.nan)
        out = pl.DataFrame(
            {
                "fact_id": pl.Series(list(self.fact_ids), dtype=pl.String),
                "trials": pl.Series(trials, dtype=pl.Int64),
                "mean_score": pl.Series(fa.means, dtype=pl.Float64),
                "variance": pl.Series(variances, dtype=pl.Float64, nan_to_null=True),
            }
        )
        self._cache["fact_stats"] = out
        return out

    def baseline(self, exclude: str | None = None) -> Baseline:
        """Aggregate of every run, or of every run that does NOT contain ``exclude``.

        This is cycgraph's leave-one-fact-out baseline: runs carrying other lessons count.
        An empty baseline has ``runs=0`` and ``mean_score=0.0``.  The mean is accumulated
        in run order (cost O(runs)).

        Examples
        --------
        >>> ledger = Ledger.from_records([
        ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
        ...     {"run_id": "r2", "score": 0.4, "fact_ids": ["b"]},
        ...     {"run_id": "r3", "score": 0.6, "fact_ids": []},
        ... ])
        >>> b = ledger.baseline(exclude="a")
        >>> b.runs, b.mean_score, round(b.variance, 12)
        (2, 0.5, 0.02)
        """
        y = self.scores
        if exclude is not None:
            mask = ~self._membership(exclude)
            y = y[mask]
        return _aggregate(y)

    def baselines(self, fact_ids: Sequence[str] | None = None) -> pl.DataFrame:
        """Leave-one-fact-out baselines for several lessons at once.

        Returns
        -------
        polars.DataFrame
            Columns ``fact_id``, ``baseline_runs``, ``baseline_mean``,
            ``baseline_variance`` (null below 2 runs).  Default: every lesson.

        Notes
        -----
        Cost: O(runs x lessons-per-run + lessons): each baseline is the total minus the
        lesson's runs (count, sum, and Chan's decomposition of the sum of squares).  A
        lesson in at least half the runs gets its baseline in run order instead (O(runs)
        each; at most twice the lessons per run of them).  Subtraction can differ from the
        run-order :meth:`baseline` in the last bits (see ``cogstats._ledger_stats``).

        Examples
        --------
        >>> ledger = Ledger.from_records([
        ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
        ...     {"run_id": "r2", "score": 0.5, "fact_ids": []},
        ... ])
        >>> ledger.baselines().rows()
        [('a', 1, 0.5, None)]
        """
        ids = list(self.fact_ids if fact_ids is None else fact_ids)
        g = self._group_arrays(ids)
        return pl.DataFrame(
            {
                "fact_id": pl.Series(ids, dtype=pl.String),
                "baseline_runs": pl.Series(g.n_b, dtype=pl.Int64),
                "baseline_mean": pl.Series(g.mean_b, dtype=pl.Float64),
                "baseline_variance": pl.Series(g.var_b, dtype=pl.Float64, nan_to_null=True),
            }
        )

    # ------------------------------------------------------------------ internals
    def _membership(self, fact_id: str) -> np.ndarray:
        """Boolean vector: which runs contain ``fact_id``."""
        _, rows, cols = self._facts_index()
        out = np.zeros(len(self), dtype=bool)
        pos = self._cache["fact_pos"].get(fact_id)
        if pos is not None:
            out[rows[cols == pos]] = True
        return out

    def _facts_index(self) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """Distinct lesson ids and the (row, col) pairs of the deduplicated inclusions."""
        cached = self._cache.get("facts_index")
        if cached is None:
            ids, rows, cols, pos = _ledger_stats.facts_index(self._fact_ids)
            cached = (ids, rows, cols)
            self._cache["facts_index"] = cached
            self._cache["fact_pos"] = pos
        return cached

    def _fact_arrays(self) -> _ledger_stats.FactArrays:
        """With-lesson sufficient statistics (cached until the ledger changes)."""
        cached = self._cache.get("fact_arrays")
        if cached is None:
            ids, rows, cols = self._facts_index()
            cached = _ledger_stats.fact_arrays(self.scores, rows, cols, len(ids))
            self._cache["fact_arrays"] = cached
        return cached

    def _fact_columns(self, fact_ids: Sequence[str]) -> np.ndarray:
        """Column number of each lesson in the inclusion index (-1: not in the ledger)."""
        self._facts_index()
        pos = self._cache["fact_pos"]
        return np.fromiter((pos.get(f, -1) for f in fact_ids), dtype=np.int64, count=len(fact_ids))

    def _group_arrays(self, fact_ids: Sequence[str]) -> _ledger_stats.GroupArrays:
        """With-lesson and leave-one-out statistics of ``fact_ids`` (aligned arrays)."""
        return _ledger_stats.group_arrays(self._fact_arrays(), self._fact_columns(fact_ids))

    def _extend(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        source: str | None,
        fact_ids_required: bool,
        replace: bool = False,
        row_offset: int = 0,
        row_numbers: Sequence[int] | None = None,
    ) -> None:
        """Validate ``records`` and append them (all or nothing)."""
        new_ids: list[str] = []
        new_scores: list[float] = []
        new_facts: list[list[str]] = []
        new_covs: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        repeated: list[tuple[int, str, list[str]]] = []
        kinds = {name: column_kind(values) for name, values in self._covariates.items()}
        for k, rec in enumerate(records):
            row = row_numbers[k] if row_numbers is not None else row_offset + k + 1
            run_id, score, facts, covs = validate_record(
                rec, row=row, source=source, fact_ids_required=fact_ids_required
            )
            if not replace:
                if run_id in seen:
                    raise LedgerError(
                        f"duplicate run_id {run_id!r} (first at row {seen[run_id]}); "
                        "a ledger file holds each run once",
                        row=row,
                        field="run_id",
                        source=source,
                    )
                if run_id in self._index:
                    raise LedgerError(
                        f"run_id {run_id!r} is already in the ledger; use "
                        "Ledger.record() to replace a run",
                        row=row,
                        field="run_id",
                        source=source,
                    )
                seen[run_id] = row
            for name, value in covs.items():
                kind = value_kind(value)
                if kind is None:
                    continue
                known = kinds.get(name)
                if known is None or {known, kind} == {"int", "float"}:
                    kinds[name] = "float" if known == "float" else kind
                elif known != kind:
                    raise LedgerError(
                        f"covariate holds {kind} here but {known} in earlier rows; "
                        "one column holds one type",
                        row=row,
                        field=name,
                        source=source,
                    )
            if len(set(facts)) != len(facts):
                repeated.append((row, run_id, facts))
            new_ids.append(run_id)
            new_scores.append(score)
            new_facts.append(facts)
            new_covs.append(covs)
        if repeated:
            warn_repeated(repeated, source)
        # all rows valid: commit
        for run_id, score, facts, covs in zip(
            new_ids, new_scores, new_facts, new_covs, strict=True
        ):
            i = self._index.get(run_id)
            if i is None:
                i = len(self._run_ids)
                self._index[run_id] = i
                self._run_ids.append(run_id)
                self._scores.append(score)
                self._fact_ids.append(facts)
                for values in self._covariates.values():
                    values.append(None)
            else:
                self._scores[i] = score
                self._fact_ids[i] = facts
                for values in self._covariates.values():
                    values[i] = None
            for name, value in covs.items():
                if name not in self._covariates:
                    self._covariates[name] = [None] * len(self._run_ids)
                self._covariates[name][i] = value
        self._cache.clear()


# ---------------------------------------------------------------------- helpers
def warn_repeated(repeated: list[tuple[int, str, list[str]]], source: str | None) -> None:
    """One LedgerWarning for the runs that list a lesson more than once."""
    row, run_id, facts = repeated[0]
    counts: dict[str, int] = {}
    for f in facts:
        counts[f] = counts.get(f, 0) + 1
    fact, times = next((f, c) for f, c in counts.items() if c > 1)
    more = ""
    if len(repeated) > 1:
        rows = ", ".join(str(r) for r, _, _ in repeated[1:6])
        etc = ", ..." if len(repeated) > 6 else ""
        more = f"; {len(repeated) - 1} more run(s) repeat a lesson (rows {rows}{etc})"
    warnings.warn(
        LedgerWarning(
            f"run {run_id!r} lists lesson {fact!r} {times} times; it counts once (cycgraph's "
            f"rule) and the stored fact_ids keep the repeat{more}",
            row=row,
            field="fact_ids",
            source=source,
        ),
        stacklevel=4,
    )


def _aggregate(y: np.ndarray) -> Baseline:
    n = len(y)
    if n == 0:
        return Baseline(runs=0, mean_score=0.0, variance=None)
    # np.cumsum accumulates left to right, like cycgraph's loop (np.sum is pairwise)
    mean = float(np.cumsum(y)[-1] / n)
    if n < 2:
        return Baseline(runs=n, mean_score=mean, variance=None)
    dev = y - mean
    return Baseline(runs=n, mean_score=mean, variance=float(np.dot(dev, dev) / (n - 1)))


def validate_record(
    rec: Mapping[str, Any], *, row: int, source: str | None, fact_ids_required: bool
) -> tuple[str, float, list[str], dict[str, Any]]:
    """Validate one run as the ledger does: ``(run_id, score, fact_ids, covariates)``."""
    if type(rec) is not dict and not isinstance(rec, Mapping):
        raise LedgerError(
            f"a run must be a mapping; got {type(rec).__name__}", row=row, source=source
        )
    for name in ("run_id", "score") + (("fact_ids",) if fact_ids_required else ()):
        if name not in rec:
            raise LedgerError(
                f"missing required field; the record has {list(rec)}"
                + (_map_hint(name, list(rec)) if source is not None else ""),
                row=row,
                field=name,
                source=source,
            )
    run_id = rec["run_id"]
    if not isinstance(run_id, str) or not run_id.strip():
        hint = ""
        if isinstance(run_id, numbers.Number) and not isinstance(run_id, bool):
            hint = (
                f' (run ids are strings: write "{run_id}", not {run_id}; CSV run ids are '
                "always read as strings)"
            )
        raise LedgerError(
            f"run_id must be a non-empty string; got {run_id!r}{hint}",
            row=row,
            field="run_id",
            source=source,
        )
    score = rec["score"]
    if type(score) is not float or not 0.0 <= score <= 1.0:  # (NaN fails it too)
        score = _validate_score(score, row, source)
    facts = _validate_id_list(rec.get("fact_ids", []), "fact_ids", row, source)
    covs: dict[str, Any] = {}
    for key, value in rec.items():
        if key in REQUIRED_COLUMNS:
            continue
        if not isinstance(key, str) or not key:
            raise LedgerError(
                f"column names must be non-empty strings; got {key!r}", row=row, source=source
            )
        if key == "eligible_ids":
            covs[key] = None if value is None else _validate_id_list(value, key, row, source)
        elif key == "propensities":
            covs[key] = None if value is None else _validate_propensities(value, row, source)
        else:
            covs[key] = _validate_covariate(key, value, row, source)
    _check_propensity_record(facts, covs, row, source)
    return run_id, score, facts, covs


def _validate_score(score: Any, row: int, source: str | None) -> float:
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise LedgerError(
            f"score must be a number in [0, 1]; got {score!r}"
            + (" (a string, not a number)" if isinstance(score, str) else ""),
            row=row,
            field="score",
            source=source,
        )
    if isinstance(score, numbers.Integral) and not 0 <= int(score) <= 1:  # float() overflows
        raise LedgerError(
            f"score must be a finite number in [0, 1]; got {_short_value(score)}",
            row=row,
            field="score",
            source=source,
        )
    score = float(score)
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise LedgerError(
            f"score must be a finite number in [0, 1]; got {score!r}",
            row=row,
            field="score",
            source=source,
        )
    return score


def _validate_id_list(value: Any, field: str, row: int, source: str | None) -> list[str]:
    if value is None:
        return []
    if type(value) is list and all(
        type(f) is str and f.isascii() and not f.isspace() and f for f in value
    ):
        return list(value)  # the common case: plain ASCII ids (nothing to normalise)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        hint = (
            " (only CSV cells are split into ids; JSON and Parquet hold a list)"
            if isinstance(value, str)
            else " (an object or struct is not a list: its keys are not read as lesson ids)"
            if isinstance(value, Mapping)
            else ""
        )
        raise LedgerError(
            f"{field} must be a list of lesson ids (strings); got {_short_value(value)}{hint}",
            row=row,
            field=field,
            source=source,
        )
    out = []
    for k, f in enumerate(value):
        if not isinstance(f, str) or not f.strip():
            raise LedgerError(
                f"{field}[{k}] must be a non-empty string lesson id; got {f!r}",
                row=row,
                field=field,
                source=source,
            )
        if not f.isascii():
            try:
                f = unicodedata.normalize("NFC", f)
                f.encode("utf-8")
            except UnicodeError:
                raise LedgerError(
                    f"{field}[{k}] is not valid Unicode text (a lone surrogate?); got {f!r}",
                    row=row,
                    field=field,
                    source=source,
                ) from None
        out.append(f)
    return out


def _map_hint(name: str, keys: list[str]) -> str:
    """' ...map it: columns={...} or --column ...' for a field a file's record lacks."""
    guess = _ledger_io.guess_source(name, [k for k in keys if k not in REQUIRED_COLUMNS])
    if guess is None:
        return ""
    return (
        f"; if {guess!r} holds it, map it: Ledger.read(path, columns={{{name!r}: {guess!r}}}), "
        f"or on the command line --column {name}={guess}"
    )


def _validate_propensities(value: Any, row: int, source: str | None) -> list[float]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise LedgerError(
            f"propensities must be a list of probabilities; got {_short_value(value)}",
            row=row,
            field="propensities",
            source=source,
        )
    out = []
    for k, p in enumerate(value):
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not _unit(p):
            raise LedgerError(
                f"propensities[{k}] must be a probability in [0, 1]; got {_short_value(p)}",
                row=row,
                field="propensities",
                source=source,
            )
        out.append(float(p))
    return out


def _validate_covariate(key: str, value: Any, row: int, source: str | None) -> Any:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is float and math.isfinite(value):
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)  # numpy str_ and other subclasses become plain str
    if isinstance(value, numbers.Integral):
        value = int(value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise LedgerError(
                f"integer covariate {_short_value(value)} is beyond the 64-bit range a "
                "covariate column holds; store it as a string (an id) or a float (a "
                "magnitude)",
                row=row,
                field=key,
                source=source,
            )
        return value
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise LedgerError(
                f"covariate values must be finite (use null for missing); got {value!r}",
                row=row,
                field=key,
                source=source,
            )
        return v
    raise LedgerError(
        f"covariate values must be numbers, strings, booleans or null; got {_short_value(value)}",
        row=row,
        field=key,
        source=source,
    )


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _unit(p: numbers.Real) -> bool:
    """Whether ``p`` lies in [0, 1] (an integral ``p`` compared exactly: float() overflows)."""
    if isinstance(p, numbers.Integral):
        return 0 <= int(p) <= 1
    return 0.0 <= float(p) <= 1.0


def _short_value(value: Any) -> str:
    """``repr(value)`` cut to 80 characters (an integer of 4,000 digits names its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _covariate_series(name: str, values: list[Any]) -> pl.Series:
    if name == "eligible_ids":
        return pl.Series(name, values, dtype=pl.List(pl.String))
    if name == "propensities":
        return pl.Series(name, values, dtype=pl.List(pl.Float64))
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int}:
        return pl.Series(name, values, dtype=pl.Int64)
    if kinds <= {int, float}:
        return pl.Series(name, [None if v is None else float(v) for v in values], dtype=pl.Float64)
    if kinds <= {bool}:
        return pl.Series(name, values, dtype=pl.Boolean)
    if kinds <= {str}:
        return pl.Series(name, values, dtype=pl.String)
    raise LedgerError(
        f"covariate mixes types {sorted(k.__name__ for k in kinds)}; one column holds one type",
        field=name,
    )


def value_kind(value: Any) -> str | None:
    """Return the type name of a covariate value (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "list"


def column_kind(values: list[Any]) -> str | None:
    """Return a covariate column's type (``int`` with ``float``: ``float``)."""
    kinds = {value_kind(v) for v in values} - {None}
    if kinds == {"int", "float"}:
        return "float"
    return next(iter(kinds)) if kinds else None


def _check_propensity_record(
    facts: list[str], covs: dict[str, Any], row: int, source: str | None
) -> None:
    ids, ps = covs.get("eligible_ids"), covs.get("propensities")
    if ids is None and ps is None:
        return
    if ids is None or ps is None:
        missing = "eligible_ids" if ids is None else "propensities"
        raise LedgerError(
            "logged propensities need both eligible_ids and propensities",
            row=row,
            field=missing,
            source=source,
        )
    if len(ids) != len(ps):
        raise LedgerError(
            f"eligible_ids has {len(ids)} entries but propensities has {len(ps)}",
            row=row,
            field="propensities",
            source=source,
        )
    injected = set(facts)
    for f, p in zip(ids, ps, strict=True):
        if f in injected and p == 0.0:
            raise LedgerError(
                f"lesson {f!r} was injected but its logged propensity is 0",
                row=row,
                field="propensities",
                source=source,
            )
        if f not in injected and p == 1.0:
            raise LedgerError(
                f"lesson {f!r} was not injected but its logged propensity is 1",
                row=row,
                field="propensities",
                source=source,
            )
    missing_ids = injected - set(ids)
    if missing_ids:
        raise LedgerError(
            f"injected lesson(s) {sorted(missing_ids)} are not in eligible_ids, so their "
            "propensity is unknown",
            row=row,
            field="eligible_ids",
            source=source,
        )
