"""The ledger of run outcomes: which lessons went into each run, and how the run scored.

A :class:`Ledger` holds one row per run (``run_id``, ``score`` in [0, 1], ``fact_ids``,
then optional covariates such as a difficulty proxy, a task family, or the logged
injection propensities ``eligible_ids``/``propensities``).  It validates everything at
the door, reads and writes JSON Lines, CSV, Parquet and cycgraph's JSON, and answers the
per-lesson questions every estimator and gate asks: trials, mean score, sample variance,
the leave-one-fact-out baseline, and the sparse run x lesson inclusion design.

Semantics follow cycgraph's ``InMemoryOutcomeLedger`` (see
``../shared/reference/cycgraph-gate.md``): recording a ``run_id`` again replaces the earlier
outcome in place; a lesson id listed twice in one run counts once; the baseline of a lesson
is every recorded run that does not contain it.  Means are accumulated in run order, as
cycgraph does, so point-estimate ties (``0.55 - 0.50 >= 0.05``) come out the same.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import sparse

from cogstats._results import frame_text
from cogstats._validation import LedgerError, ParameterError, check_choice

__all__ = ["Baseline", "InclusionDesign", "Ledger"]

REQUIRED_COLUMNS = ("run_id", "score", "fact_ids")
#: Optional list columns holding the logged injection propensities of a run: for every
#: lesson that retrieval could have injected (``eligible_ids``), the probability that it
#: was injected (``propensities``, aligned with ``eligible_ids``).
PROPENSITY_COLUMNS = ("eligible_ids", "propensities")
FORMATS = ("jsonl", "csv", "parquet", "cycgraph-json")
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "cycgraph-json",
}

LedgerFormat = Literal["jsonl", "csv", "parquet", "cycgraph-json"]


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
        """The inclusion matrix as a dense ``(n_runs, n_facts)`` float64 array."""
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
            raise LedgerError(
                f"missing required column(s) {missing}; a ledger needs {list(REQUIRED_COLUMNS)}",
                field=missing[0],
                source=source,
            )
        ledger = cls()
        ledger._extend(frame.iter_rows(named=True), source=source, fact_ids_required=True)
        return ledger

    @classmethod
    def read(cls, path: str | Path, *, format: LedgerFormat | None = None) -> Ledger:
        """Read a ledger file.

        Parameters
        ----------
        path : str or Path
            The file.
        format : {"jsonl", "csv", "parquet", "cycgraph-json"}, optional
            Inferred from the suffix when omitted (``.jsonl``/``.ndjson``, ``.csv``,
            ``.parquet``/``.pq``, ``.json``).  CSV holds fact ids space- or
            semicolon-separated in one cell; cycgraph JSON is either a list of
            ``RunOutcome`` records or an object whose ``runs`` array holds them.

        Raises
        ------
        LedgerError
            Naming the file, the row (1-based data row; for JSON Lines the line) and the
            field of the first malformed record.  Nothing is silently dropped.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
        >>> _ = path.write_text("run_id,score,fact_ids\\nr1,0.9,a b\\nr2,0.4,\\n")
        >>> Ledger.read(path).fact_stats()["fact_id"].to_list()
        ['a', 'b']
        """
        path = Path(path)
        fmt = _resolve_format(path, format)
        if not path.exists():
            raise FileNotFoundError(f"ledger file not found: {path}")
        src = str(path)
        if fmt == "jsonl":
            return cls._from_jsonl(path, src)
        if fmt == "csv":
            return cls._from_csv(path, src)
        if fmt == "parquet":
            try:
                frame = pl.read_parquet(path)
            except Exception as exc:  # pragma: no cover - depends on the file
                raise LedgerError(f"cannot read Parquet: {exc}", source=src) from exc
            return cls.from_frame(frame, source=src)
        return cls._from_cycgraph_json(path, src)

    def write(self, path: str | Path, *, format: LedgerFormat | None = None) -> Path:
        """Write the ledger; the format is inferred from the suffix unless given.

        Round trips through :meth:`read` preserve run order, scores (exactly), fact ids
        and covariates.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.25, "fact_ids": ["a"]}])
        >>> path = ledger.write(pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl")
        >>> Ledger.read(path).frame.equals(ledger.frame)
        True
        """
        path = Path(path)
        fmt = _resolve_format(path, format)
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            self.frame.write_parquet(path)
        elif fmt == "jsonl":
            with path.open("w", encoding="utf-8") as fh:
                for rec in self.to_records():
                    fh.write(json.dumps(rec, allow_nan=False) + "\n")
        elif fmt == "cycgraph-json":
            with path.open("w", encoding="utf-8") as fh:
                json.dump({"runs": self.to_records()}, fh, indent=1, allow_nan=False)
        else:
            self._write_csv(path)
        return path

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
        return len(self._run_ids)

    def __repr__(self) -> str:
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
        return self.frame[name]

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
        """Same as :attr:`frame` (the house-wide spelling)."""
        return self.frame

    def to_records(self) -> list[dict[str, Any]]:
        """The runs as a list of plain dicts (JSON-ready)."""
        return [dict(row) for row in self.frame.iter_rows(named=True)]

    def summary(self) -> str:
        """A text table of per-lesson statistics with their leave-one-out baselines."""
        stats = self.fact_stats().join(self.baselines(), on="fact_id", how="left")
        return f"{self!r}\n{frame_text(stats)}"

    # ------------------------------------------------------------------ statistics
    def design(self, fact_ids: Sequence[str] | None = None) -> InclusionDesign:
        """The sparse run x lesson inclusion design.

        Parameters
        ----------
        fact_ids : sequence of str, optional
            Columns to build, in this order (a lesson absent from the ledger gives an all
            zero column).  Default: every lesson, in order of first appearance.

        Examples
        --------
        >>> ledger = Ledger.from_records([
        ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "a"]},
        ...     {"run_id": "r2", "score": 0.5, "fact_ids": ["b"]},
        ... ])
        >>> ledger.design().dense().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        all_ids, rows, cols = self._facts_index()
        base = self._cache.get("design")
        if base is None:
            data = np.ones(len(rows), dtype=np.float64)
            mat = sparse.csr_array(
                (data, (rows, cols)), shape=(len(self), len(all_ids)), dtype=np.float64
            )
            mat.sum_duplicates()
            base = InclusionDesign(matrix=mat, fact_ids=all_ids, run_ids=self.run_ids)
            self._cache["design"] = base
        if fact_ids is None:
            return base
        wanted = tuple(fact_ids)
        pos = {f: j for j, f in enumerate(all_ids)}
        csc = base.matrix.tocsc()
        empty = sparse.csc_array((len(self), 1), dtype=np.float64)
        blocks = [csc[:, [pos[f]]] if f in pos else empty for f in wanted]
        mat = sparse.hstack(blocks, format="csr") if blocks else sparse.csr_array((len(self), 0))
        return InclusionDesign(matrix=sparse.csr_array(mat), fact_ids=wanted, run_ids=self.run_ids)

    def fact_stats(self) -> pl.DataFrame:
        """Per-lesson trials, mean score and sample variance.

        Returns
        -------
        polars.DataFrame
            Columns ``fact_id``, ``trials`` (runs containing the lesson; a duplicate id in
            one run counts once), ``mean_score`` (accumulated in run order),
            ``variance`` (n - 1 denominator; null below 2 trials).  Lessons in order of
            first appearance.

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
        fact_ids = self.fact_ids
        trials, means, variances = self._with_stats()
        out = pl.DataFrame(
            {
                "fact_id": pl.Series(list(fact_ids), dtype=pl.String),
                "trials": pl.Series(trials, dtype=pl.Int64),
                "mean_score": pl.Series(means, dtype=pl.Float64),
                "variance": pl.Series(
                    [None if t < 2 else float(v) for t, v in zip(trials, variances, strict=True)],
                    dtype=pl.Float64,
                ),
            }
        )
        self._cache["fact_stats"] = out
        return out

    def baseline(self, exclude: str | None = None) -> Baseline:
        """Aggregate of every run, or of every run that does NOT contain ``exclude``.

        This is cycgraph's leave-one-fact-out baseline: runs carrying other lessons count.
        An empty baseline has ``runs=0`` and ``mean_score=0.0``.

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
        y = self.scores
        runs, means, variances = [], [], []
        for f in ids:
            agg = _aggregate(y[~self._membership(f)])
            runs.append(agg.runs)
            means.append(agg.mean_score)
            variances.append(agg.variance)
        return pl.DataFrame(
            {
                "fact_id": pl.Series(ids, dtype=pl.String),
                "baseline_runs": pl.Series(runs, dtype=pl.Int64),
                "baseline_mean": pl.Series(means, dtype=pl.Float64),
                "baseline_variance": pl.Series(variances, dtype=pl.Float64),
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
            pos: dict[str, int] = {}
            rows: list[int] = []
            cols: list[int] = []
            for i, ids in enumerate(self._fact_ids):
                seen: set[str] = set()
                for f in ids:
                    if f in seen:
                        continue
                    seen.add(f)
                    j = pos.setdefault(f, len(pos))
                    rows.append(i)
                    cols.append(j)
            cached = (
                tuple(pos),
                np.asarray(rows, dtype=np.int64),
                np.asarray(cols, dtype=np.int64),
            )
            self._cache["facts_index"] = cached
            self._cache["fact_pos"] = pos
        return cached

    def _with_stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Trials, means (sequential sums in run order) and two-pass variances per lesson."""
        design = self.design()
        # facts x runs in CSR with sorted column indices: each lesson's runs in run order,
        # so the sparse mat-vec below accumulates every lesson's sum sequentially, in the
        # same order as cycgraph's loop (the margin rule compares point estimates exactly).
        by_fact = sparse.csr_array(design.matrix.T)
        by_fact.sort_indices()
        y = self.scores
        trials = np.diff(by_fact.indptr).astype(np.int64)
        sums = by_fact @ y
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(trials > 0, sums / np.maximum(trials, 1), 0.0)
        dev = y[by_fact.indices] - np.repeat(means, trials)
        ss = np.zeros(len(trials))
        nonempty = trials > 0
        if nonempty.any():
            starts = by_fact.indptr[:-1][nonempty]
            ss[nonempty] = np.add.reduceat(dev * dev, starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            variances = np.where(trials > 1, ss / np.maximum(trials - 1, 1), np.nan)
        return trials, means, variances

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
        kinds = {name: _column_kind(values) for name, values in self._covariates.items()}
        for k, rec in enumerate(records):
            row = row_numbers[k] if row_numbers is not None else row_offset + k + 1
            run_id, score, facts, covs = _validate_record(
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
                kind = _kind(value)
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
            new_ids.append(run_id)
            new_scores.append(score)
            new_facts.append(facts)
            new_covs.append(covs)
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

    @classmethod
    def _from_jsonl(cls, path: Path, src: str) -> Ledger:
        records: list[Mapping[str, Any]] = []
        lines: list[int] = []
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise LedgerError(
                        f"malformed JSON ({exc.msg} at column {exc.colno})", row=lineno, source=src
                    ) from None
                if not isinstance(rec, dict):
                    raise LedgerError(
                        f"each line must be a JSON object; got {type(rec).__name__}",
                        row=lineno,
                        source=src,
                    )
                records.append(rec)
                lines.append(lineno)
        ledger = cls()
        ledger._extend(records, source=src, fact_ids_required=False, row_numbers=lines)
        return ledger

    @classmethod
    def _from_cycgraph_json(cls, path: Path, src: str) -> Ledger:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise LedgerError(
                f"malformed JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", source=src
            ) from None
        if isinstance(doc, dict):
            if "runs" not in doc:
                raise LedgerError(
                    "a cycgraph JSON object must hold its run outcomes under 'runs'",
                    field="runs",
                    source=src,
                )
            doc = doc["runs"]
        if not isinstance(doc, list):
            raise LedgerError(
                "cycgraph JSON must be a list of RunOutcome records or {'runs': [...]}",
                source=src,
            )
        for k, rec in enumerate(doc, start=1):
            if not isinstance(rec, dict):
                raise LedgerError(
                    f"each run must be a JSON object; got {type(rec).__name__}", row=k, source=src
                )
        ledger = cls()
        ledger._extend(doc, source=src, fact_ids_required=False)
        return ledger

    @classmethod
    def _from_csv(cls, path: Path, src: str) -> Ledger:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader)
            except StopIteration:
                raise LedgerError("empty CSV file (no header)", source=src) from None
            header = [h.strip() for h in header]
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                raise LedgerError(
                    f"missing required column(s) {missing}; the header is {header}",
                    field=missing[0],
                    source=src,
                )
            dup = {h for h in header if header.count(h) > 1}
            if dup:
                raise LedgerError(f"duplicate column(s) {sorted(dup)} in the header", source=src)
            raw_rows: list[list[str]] = []
            for k, cells in enumerate(reader, start=1):
                if not cells or all(not c.strip() for c in cells):
                    raise LedgerError("empty row", row=k, source=src)
                if len(cells) != len(header):
                    raise LedgerError(
                        f"has {len(cells)} fields; the header has {len(header)}",
                        row=k,
                        source=src,
                    )
                raw_rows.append(cells)
        covariate_names = [h for h in header if h not in REQUIRED_COLUMNS]
        parsers = {
            name: _infer_csv_column(name, [r[header.index(name)] for r in raw_rows], src)
            for name in covariate_names
            if name not in PROPENSITY_COLUMNS
        }
        records: list[dict[str, Any]] = []
        for k, cells in enumerate(raw_rows, start=1):
            cell = dict(zip(header, cells, strict=True))
            rec: dict[str, Any] = {"run_id": cell["run_id"]}
            score_text = cell["score"].strip()
            try:
                rec["score"] = float(score_text)
            except ValueError:
                raise LedgerError(
                    f"score must be a number in [0, 1]; got {score_text!r}",
                    row=k,
                    field="score",
                    source=src,
                ) from None
            rec["fact_ids"] = _split_ids(cell["fact_ids"])
            if "eligible_ids" in cell:
                rec["eligible_ids"] = _split_ids(cell["eligible_ids"])
            if "propensities" in cell:
                toks = _split_ids(cell["propensities"])
                try:
                    rec["propensities"] = [float(t) for t in toks]
                except ValueError:
                    raise LedgerError(
                        f"propensities must be numbers; got {cell['propensities']!r}",
                        row=k,
                        field="propensities",
                        source=src,
                    ) from None
            for name, parse in parsers.items():
                rec[name] = parse(cell[name], k)
            records.append(rec)
        ledger = cls()
        ledger._extend(records, source=src, fact_ids_required=True)
        return ledger

    def _write_csv(self, path: Path) -> None:
        lists = {"fact_ids", *PROPENSITY_COLUMNS}
        all_tokens = [f for ids in self._fact_ids for f in ids]
        for name in PROPENSITY_COLUMNS[:1]:
            if name in self._covariates:
                all_tokens += [f for ids in self._covariates[name] if ids for f in ids]
        sep = ";" if any(any(ch.isspace() for ch in t) for t in all_tokens) else " "
        if sep == ";" and any(";" in t for t in all_tokens):
            raise LedgerError(
                "a lesson id contains both whitespace and ';', so it cannot be written to CSV; "
                "use JSON Lines or Parquet"
            )
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        header = ["run_id", "score", "fact_ids", *self._covariates]
        writer.writerow(header)
        for i in range(len(self)):
            row = [self._run_ids[i], repr(self._scores[i]), sep.join(self._fact_ids[i])]
            for name, values in self._covariates.items():
                v = values[i]
                if name in lists:
                    row.append(
                        ""
                        if v is None
                        else sep.join(repr(x) if name == "propensities" else x for x in v)
                    )
                elif v is None:
                    row.append("")
                elif isinstance(v, float):
                    row.append(repr(v))
                else:
                    row.append(str(v))
            writer.writerow(row)
        path.write_text(buf.getvalue(), encoding="utf-8")


# ---------------------------------------------------------------------- helpers
def _resolve_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        return check_choice("format", fmt, FORMATS)
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise ParameterError(
            f"cannot infer the ledger format from suffix {suffix!r} of {path}; pass "
            f"format= one of {list(FORMATS)} or use a suffix in {sorted(_SUFFIXES)}"
        )
    return _SUFFIXES[suffix]


def _split_ids(text: str) -> list[str]:
    text = text.strip()
    if not text:
        return []
    if ";" in text:
        return [t.strip() for t in text.split(";") if t.strip()]
    return text.split()


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


def _validate_record(
    rec: Mapping[str, Any], *, row: int, source: str | None, fact_ids_required: bool
) -> tuple[str, float, list[str], dict[str, Any]]:
    if not isinstance(rec, Mapping):
        raise LedgerError(
            f"a run must be a mapping; got {type(rec).__name__}", row=row, source=source
        )
    for name in ("run_id", "score") + (("fact_ids",) if fact_ids_required else ()):
        if name not in rec:
            raise LedgerError("missing required field", row=row, field=name, source=source)
    run_id = rec["run_id"]
    if not isinstance(run_id, str) or not run_id.strip():
        raise LedgerError(
            f"run_id must be a non-empty string; got {run_id!r}",
            row=row,
            field="run_id",
            source=source,
        )
    score = rec["score"]
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise LedgerError(
            f"score must be a number in [0, 1]; got {score!r}",
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


def _validate_id_list(value: Any, field: str, row: int, source: str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise LedgerError(
            f"{field} must be a list of lesson ids (strings); got {value!r}",
            row=row,
            field=field,
            source=source,
        )
    out = []
    for k, f in enumerate(value):
        if not isinstance(f, str) or not f:
            raise LedgerError(
                f"{field}[{k}] must be a non-empty string lesson id; got {f!r}",
                row=row,
                field=field,
                source=source,
            )
        out.append(f)
    return out


def _validate_propensities(value: Any, row: int, source: str | None) -> list[float]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise LedgerError(
            f"propensities must be a list of probabilities; got {value!r}",
            row=row,
            field="propensities",
            source=source,
        )
    out = []
    for k, p in enumerate(value):
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
            raise LedgerError(
                f"propensities[{k}] must be a probability in [0, 1]; got {p!r}",
                row=row,
                field="propensities",
                source=source,
            )
        out.append(float(p))
    return out


def _validate_covariate(key: str, value: Any, row: int, source: str | None) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)  # numpy str_ and other subclasses become plain str
    if isinstance(value, numbers.Integral):
        return int(value)
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
        f"covariate values must be numbers, strings, booleans or null; got {value!r}",
        row=row,
        field=key,
        source=source,
    )


def _infer_csv_column(name: str, cells: list[str], src: str) -> Any:
    """Pick the narrowest type every non-empty cell parses as: int, float, bool, str."""
    values = [c.strip() for c in cells]
    present = [v for v in values if v]

    def all_parse(fn: Any) -> bool:
        try:
            for v in present:
                fn(v)
        except ValueError:
            return False
        return True

    if present and all_parse(int):

        def parse_int(text: str, row: int) -> int | None:
            return int(text) if text.strip() else None

        return parse_int
    if present and all_parse(float):

        def parse_float(text: str, row: int) -> float | None:
            if not text.strip():
                return None
            return float(text)

        return parse_float
    if present and all(v.lower() in ("true", "false") for v in present):

        def parse_bool(text: str, row: int) -> bool | None:
            return None if not text.strip() else text.strip().lower() == "true"

        return parse_bool

    def parse_str(text: str, row: int) -> str | None:
        return text if text.strip() else None

    del name, src
    return parse_str


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


def _kind(value: Any) -> str | None:
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


def _column_kind(values: list[Any]) -> str | None:
    kinds = {_kind(v) for v in values} - {None}
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
