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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._results import escape_ids, frame_text
from cogstats._validation import LedgerError, ParameterError
from cogstats.ledger import _columns, _csv_write, _lesson_read, _read
from cogstats.ledger._columns import REQUIRED_COLUMNS, LedgerFormat
from cogstats.ledger._lessons import lesson_table
from cogstats.ledger._records import column_kind, validate_record, value_kind, warn_repeated
from cogstats.stats import groups as lesson_groups

if TYPE_CHECKING:  # scipy.sparse loads with the first design (0.2 s off every start-up)
    from scipy import sparse

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
            raise _columns.missing_columns_error(missing, frame.columns, source, {})
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
        fmt, implied = _columns.resolve_format(path, format)
        mapping = _columns.check_columns(columns)
        delim = _columns.check_delimiter(delimiter, fmt)
        if not path.exists():
            raise FileNotFoundError(f"ledger file not found: {path}")
        if path.is_dir():
            raise ParameterError(f"path must be a ledger file; {path} is a directory")
        src = str(path)
        ledger = cls()
        try:
            records, rows, required = _read.read_records(
                path, fmt, mapping=mapping, delimiter=delim if delim is not None else implied
            )
            try:
                ledger._extend(records, source=src, fact_ids_required=required, row_numbers=rows)
            finally:  # a streamed reader stopped early (a bad row) closes its file now
                close = getattr(records, "close", None)
                if callable(close):
                    close()
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
        path = Path(path)
        fmt, implied = _columns.resolve_format(path, format)
        mapping = _columns.check_columns(columns)
        delim = _columns.check_delimiter(delimiter, fmt)
        if not path.exists():
            raise FileNotFoundError(f"lesson table file not found: {path}")
        if path.is_dir():
            raise ParameterError(f"path must be a lesson table file; {path} is a directory")
        frame, rows = _lesson_read.read_lesson_frame(
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
        fmt, implied = _columns.resolve_format(path, format)
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
        return _csv_write.csv_text(
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
        run_id, score, facts, covs = validate_record(
            row, row=1, source=None, fact_ids_required=False
        )
        kinds = {name: column_kind(values) for name, values in self._covariates.items()}
        for name, value in covs.items():
            _check_kind(kinds, name, value, 1, None)
        if len(set(facts)) != len(facts):
            warn_repeated([(1, run_id, facts)], None, stacklevel=3)
        i = self._index.get(run_id)
        if i is None:  # a new run, last in run order
            i = len(self._run_ids)
            self._index[run_id] = i
            self._run_ids.append(run_id)
            self._scores.append(score)
            self._fact_ids.append(facts)
            for values in self._covariates.values():
                values.append(None)
        else:  # a run recorded again: replaced in place
            self._scores[i] = score
            self._fact_ids[i] = facts
            for values in self._covariates.values():
                values[i] = None
        for name, value in covs.items():
            if name not in self._covariates:
                self._covariates[name] = [None] * len(self._run_ids)
            self._covariates[name][i] = value
        self._cache.clear()

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
            return f"<div>{head}{escape_ids(self.frame)._repr_html_()}</div>"

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
    # deduplicated (run, lesson) inclusion pairs (cogstats.stats.groups): the cost is in
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
        run-order :meth:`baseline` in the last bits (see :mod:`cogstats.stats.groups`).

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
            ids, rows, cols, pos = lesson_groups.facts_index(self._fact_ids)
            cached = (ids, rows, cols)
            self._cache["facts_index"] = cached
            self._cache["fact_pos"] = pos
        return cached

    def _fact_arrays(self) -> lesson_groups.FactArrays:
        """With-lesson sufficient statistics (cached until the ledger changes)."""
        cached = self._cache.get("fact_arrays")
        if cached is None:
            ids, rows, cols = self._facts_index()
            cached = lesson_groups.fact_arrays(self.scores, rows, cols, len(ids))
            self._cache["fact_arrays"] = cached
        return cached

    def _fact_columns(self, fact_ids: Sequence[str]) -> np.ndarray:
        """Column number of each lesson in the inclusion index (-1: not in the ledger)."""
        self._facts_index()
        pos = self._cache["fact_pos"]
        return np.fromiter((pos.get(f, -1) for f in fact_ids), dtype=np.int64, count=len(fact_ids))

    def _group_arrays(self, fact_ids: Sequence[str]) -> lesson_groups.GroupArrays:
        """With-lesson and leave-one-out statistics of ``fact_ids`` (aligned arrays)."""
        return lesson_groups.group_arrays(self._fact_arrays(), self._fact_columns(fact_ids))

    def _extend(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        source: str | None,
        fact_ids_required: bool,
        row_offset: int = 0,
        row_numbers: Sequence[int] | None = None,
    ) -> None:
        """Validate ``records`` and append them (all or nothing).

        The runs are validated into new columns (nothing per run is kept beyond what the
        ledger stores: no record dictionaries), then committed at once; each distinct
        lesson id is validated once and stored as one string (``validate_record``'s id
        cache), so a file of millions of runs costs the ledger's own memory.
        """
        ids: list[str] = []
        scores: list[float] = []
        facts_of: list[list[str]] = []
        columns: dict[str, list[Any]] = {}  # covariates of the new runs (None where absent)
        where: dict[str, int] = {}  # run id -> position among the new runs
        repeated: list[tuple[int, str, list[str]]] = []
        kinds = {name: column_kind(values) for name, values in self._covariates.items()}
        passed: dict[str, set[type]] = {}  # value types each column has accepted
        known: dict[str, str] = {}  # lesson ids validated so far (raw -> stored)
        index = self._index
        add_id, add_score, add_facts = ids.append, scores.append, facts_of.append
        for k, rec in enumerate(records):
            row = row_numbers[k] if row_numbers is not None else row_offset + k + 1
            run_id, score, facts, covs = validate_record(
                rec, row=row, source=source, fact_ids_required=fact_ids_required, ids=known
            )
            if run_id in where or (index and run_id in index):
                raise self._duplicate(run_id, where, k, row, source, row_numbers, row_offset)
            where[run_id] = k
            add_id(run_id)
            add_score(score)
            add_facts(facts)
            if len(facts) > 1 and len(set(facts)) != len(facts):
                repeated.append((row, run_id, facts))
            if not covs and not columns:
                continue
            for name, value in covs.items():
                seen = passed.get(name)
                if seen is None or type(value) not in seen:
                    _check_kind(kinds, name, value, row, source)
                    passed.setdefault(name, set()).add(type(value))
                col = columns.get(name)
                if col is None:
                    col = columns[name] = [None] * k
                col.append(value)
            if len(covs) != len(columns):  # a column this run has no value in
                for col in columns.values():
                    if len(col) == k:
                        col.append(None)
        if repeated:
            warn_repeated(repeated, source)
        # all rows valid: commit
        n0, n = len(self._run_ids), len(ids)
        if n0 == 0:
            self._run_ids, self._scores, self._fact_ids, self._index = ids, scores, facts_of, where
        else:
            self._run_ids.extend(ids)
            self._scores.extend(scores)
            self._fact_ids.extend(facts_of)
            index.update((run_id, n0 + k) for run_id, k in where.items())
        for name, values in self._covariates.items():
            new = columns.pop(name, None)
            values.extend(new if new is not None else [None] * n)
        for name, col in columns.items():
            self._covariates[name] = [None] * n0 + col if n0 else col
        self._cache.clear()

    @staticmethod
    def _duplicate(
        run_id: str,
        where: Mapping[str, int],
        k: int,
        row: int,
        source: str | None,
        row_numbers: Sequence[int] | None,
        row_offset: int,
    ) -> LedgerError:
        first = where.get(run_id)
        if first is None:
            return LedgerError(
                f"run_id {run_id!r} is already in the ledger; use Ledger.record() to replace a run",
                row=row,
                field="run_id",
                source=source,
            )
        at = row_numbers[first] if row_numbers is not None else row_offset + first + 1
        return LedgerError(
            f"duplicate run_id {run_id!r} (first at row {at}); a ledger file holds each run once",
            row=row,
            field="run_id",
            source=source,
        )


# ---------------------------------------------------------------------- helpers
def _check_kind(
    kinds: dict[str, str | None], name: str, value: Any, row: int, source: str | None
) -> None:
    """One covariate column holds one type (integers and floats: floats); update ``kinds``."""
    kind = value_kind(value)
    if kind is None:
        return
    known = kinds.get(name)
    if known is None or {known, kind} == {"int", "float"}:
        kinds[name] = "float" if known == "float" else kind
    elif known != kind:
        raise LedgerError(
            f"covariate holds {kind} here but {known} in earlier rows; one column holds one type",
            row=row,
            field=name,
            source=source,
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
