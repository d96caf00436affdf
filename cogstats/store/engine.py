"""How a store keeps its gate's statistics: two engines behind one small interface.

- :class:`StreamingEngine`: any gate a :class:`~cogstats.gates.StreamingGate` streams
  (cycgraph's rules, the evidence gates, a gate of one's own of the gate protocol);
- :class:`LifecycleEngine`: the lifecycle gate (the ``recommended`` preset's), with its
  sufficient statistics (``Z'Z``, ``Z'y``, ``y'y``, per-lesson sums of squares) updated in
  place, O((lessons in the run + covariates)^2) a run instead of a copy of ``Z'Z``, and a
  look that calls the gate's own rule (:meth:`LifecycleGate.decide`) and hands the store
  columns, not a report frame.  The numbers are those the streaming gate's running
  statistics hold, added in the same order: the decisions are the batch gate's, bit for
  bit (tests/unit/test_store_replay.py holds the store to the simulator's reference
  engine, which judges with ``evaluate`` on the ledger).

Both hold the runs in a :class:`~cogstats.stats.StreamingStats` (``stats``): the ledger,
the trials, a run's content for the idempotence check.  A look returns the report's
columns (``fact_id``, ``decision``, ``reason``, ``why``, ``t_stat``, ``crater_t``,
``identifiable``, ``estimate``, ``std_error``) that :meth:`Lifecycle.apply` reads.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cogstats._statelock import StateWriteError
from cogstats._validation import ParameterError

__all__ = ["LifecycleEngine", "StreamingEngine", "engine_for"]

#: a look's columns, in the order Lifecycle.apply reads them
LOOK_COLUMNS = (
    "fact_id",
    "decision",
    "reason",
    "why",
    "t_stat",
    "crater_t",
    "identifiable",
    "estimate",
    "std_error",
)


def engine_for(gate: Any) -> Any:
    """Return the engine of a gate: the lifecycle gate's own, else a streaming gate's.

    Raises
    ------
    ParameterError
        For a gate neither streams (naming what streams).
    """
    from cogstats.gates import LifecycleGate

    if type(gate) is LifecycleGate:
        return LifecycleEngine(gate)
    return StreamingEngine(gate)


class StreamingEngine:
    """A :class:`~cogstats.gates.StreamingGate` as a store's engine."""

    kind = "streaming"

    def __init__(self, gate: Any) -> None:
        from cogstats.gates import StreamingGate

        self.gate = gate
        self.sg = StreamingGate(gate)

    @property
    def stats(self) -> Any:
        """The runs (a :class:`~cogstats.stats.StreamingStats`)."""
        return self.sg.stats

    def record(
        self,
        run_id: str,
        score: float,
        facts: Sequence[str],
        covs: Mapping[str, Any],
        look: tuple[list[str], Mapping[str, Any] | None] | None,
    ) -> Any:
        """Record a run; with ``look`` = (candidates, statuses), return the look's report."""
        sg = self.sg
        if look is None:
            sg.candidates = ()
        else:
            sg.candidates, sg.statuses = look[0], look[1]
        sg.record(run_id, score, list(facts), **dict(covs))
        return None if look is None else sg.report()

    def save(self, path: Path) -> None:
        """Write the statistics and runs to ``path`` (a streaming gate's state file)."""
        self.sg.save(path)

    def load(self, path: Path) -> None:
        """Read :meth:`save`'s file back (checked: checksums and invariants)."""
        from cogstats.gates import StreamingGate

        self.sg = StreamingGate.load(path, gate=self.gate)


class LifecycleEngine:
    """The lifecycle gate's statistics, updated in place (see the module notes).

    Examples
    --------
    >>> from cogstats.gates import LifecycleGate
    >>> eng = LifecycleEngine(LifecycleGate())
    >>> eng.record("r1", 0.5, ["a"], {"difficulty_proxy": 0.1}, None)
    >>> cols = eng.record("r2", 0.9, ["b"], {"difficulty_proxy": 0.3}, (["a", "b"], None))
    >>> cols["fact_id"], cols["why"]
    (['a', 'b'], ['min_trials', 'min_trials'])
    """

    kind = "lifecycle"

    def __init__(self, gate: Any) -> None:
        from cogstats.stats import StreamingStats

        self.gate = gate
        self.stats = StreamingStats()
        self.covariates: tuple[str, ...] | None = None  # fixed by the first run
        self.ids: list[str] = []  # lesson columns, first appearance first
        self.col: dict[str, int] = {}
        self.gram = np.zeros((0, 0))
        self.zty = np.zeros(0)
        self.yty = 0.0
        self.runs = 0
        self.with_ss = np.zeros(0)
        self.low = np.zeros(0)
        self.high = np.zeros(0)
        from cogstats.store.incremental import IncrementalRidge

        self.fast = IncrementalRidge(gate)

    # ------------------------------------------------------------------ runs
    def _fix_covariates(
        self, run_id: str, score: float, facts: Sequence[str], covs: Mapping[str, Any]
    ) -> None:
        """Fix the covariate columns with the first run, as the gate's running statistics."""
        first = self.gate.running_statistics().add_run(run_id, score, list(facts), dict(covs))
        self.covariates = tuple(first.covariates or ())
        f = 1 + len(self.covariates)
        self.gram = np.zeros((f, f))
        self.zty = np.zeros(f)
        self.low = np.full(len(self.covariates), math.inf)
        self.high = np.full(len(self.covariates), -math.inf)

    def add_run(
        self, run_id: str, score: float, facts: Sequence[str], covs: Mapping[str, Any]
    ) -> None:
        """Add one run (validated) to the runs and the statistics, in place."""
        if self.covariates is None:
            self._fix_covariates(run_id, score, facts, covs)
        y = float(score)
        fixed = [1.0]
        for name in self.covariates or ():
            v = covs.get(name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ParameterError(
                    f"covariates[{name!r}] must be a finite number (the statistics adjust "
                    f"for it); got {v!r}"
                )
            fixed.append(float(v))
        present = []
        new = []
        for f in dict.fromkeys(facts):
            j = self.col.get(f)
            if j is None:
                new.append(f)
                j = len(self.ids) + len(new) - 1
            present.append(j)
        self.stats.add_run(run_id, y, list(facts), dict(covs))
        if new:
            self._grow(new)
        nf = len(fixed)
        idx = np.asarray([*range(nf), *(nf + j for j in present)], dtype=np.int64)
        z = np.asarray(fixed + [1.0] * len(present))
        # the same additions, in the same order, as gram += outer(z, z) on the full vector
        self.gram[np.ix_(idx, idx)] += np.outer(z, z)
        self.zty[idx] += z * y
        self.yty = self.yty + y * y
        if present:
            self.with_ss[present] += y * y
        self.runs += 1
        if self.covariates:
            vals = np.asarray(fixed[1:])
            self.low = np.minimum(self.low, vals)
            self.high = np.maximum(self.high, vals)
        self.fast.add_run(self.runs - 1, present, len(self.ids))
        if self.fast.m0 is not None:
            self.fast.update(self.statistics(), idx, z)

    def _grow(self, new: list[str]) -> None:
        """Add lesson columns (a new array: a lesson's first run is rare)."""
        p = self.gram.shape[0]
        q = p + len(new)
        gram = np.zeros((q, q))
        gram[:p, :p] = self.gram
        self.gram = gram
        self.zty = np.concatenate([self.zty, np.zeros(len(new))])
        self.with_ss = np.concatenate([self.with_ss, np.zeros(len(new))])
        for f in new:
            self.col[f] = len(self.ids)
            self.ids.append(f)

    # ------------------------------------------------------------------ looks
    def statistics(self) -> Any:
        """Return the statistics as the gate reads them (covariates constant so far left out)."""
        from cogstats.estimators.debiased_ridge import RidgeStatistics
        from cogstats.gates.recommended import LifecycleStatistics

        cov = self.covariates or ()
        keep = [k for k in range(len(cov)) if self.high[k] > self.low[k]]
        gram, zty, nf = self.gram, self.zty, 1 + len(cov)
        if len(keep) < len(cov):
            sel = np.asarray([0, *(1 + k for k in keep), *range(nf, gram.shape[0])])
            gram, zty = gram[np.ix_(sel, sel)], zty[sel]
        ridge = RidgeStatistics(
            gram=gram if gram.shape[0] else np.zeros((1, 1)),
            zty=zty if zty.shape[0] else np.zeros(1),
            yty=self.yty,
            runs=self.runs,
            n_fixed=1 + len(keep),
            fact_ids=tuple(self.ids),
            covariates=tuple(cov[k] for k in keep),
        )
        return LifecycleStatistics(ridge, self.with_ss)

    def look(
        self, candidates: Sequence[str], statuses: Mapping[str, Any] | None
    ) -> dict[str, list[Any]]:
        """Judge ``candidates`` with the gate's rule; return the report's columns.

        The same numbers as ``gate.judge(statistics, statuses, candidates)``'s report
        (a lesson never in a run: held, ``min_trials``, or ``inactive`` when evicted or
        retired), without building its frame.
        """
        from cogstats import _codes as C
        from cogstats.gates.recommended.rule import LIFECYCLE_WHY

        # the rule reads the simulator's status codes; evicted and retired are inactive
        rule = {name: C.STATUS_NAMES.index(name) for name in C.LESSON_STATUSES}
        inactive = {rule[C.EVICTED], rule[C.RETIRED]}
        st = dict(statuses or {})

        def status(f: str) -> str:
            v = st.get(f)
            return C.CANDIDATE if v is None else str(getattr(v, "status", v))

        out: dict[str, list[Any]] = {k: [] for k in LOOK_COLUMNS}
        if self.runs == 0 or self.covariates is None:  # nothing recorded: every one held
            for f in candidates:
                _absent(out, f, rule[status(f)] in inactive)
            return out
        codes = np.fromiter(
            (rule[status(f)] for f in self.ids), dtype=np.int64, count=len(self.ids)
        )
        stats = self.statistics()
        fit = self.fast.fit(stats)
        # the gate's rule on the incremental fit (None: the batch fit)
        dec, why, x = self.gate.decide(stats, codes, fit=fit)
        dec, why = dec.tolist(), why.tolist()
        t, ct, ident = x["t"], x["crater_t"], x["identifiable"]
        est, se = x["estimate"], x["se"]
        outcome = {c: C.outcome_of_code(c) for c in set(dec)}
        for f in candidates:
            i = self.col.get(f)
            if i is None:
                _absent(out, f, rule[status(f)] in inactive)
                continue
            name, reason = outcome[dec[i]]
            out["fact_id"].append(f)
            out["decision"].append(name)
            out["reason"].append(reason)
            out["why"].append(LIFECYCLE_WHY[why[i]])
            out["t_stat"].append(_num(t[i]))
            out["crater_t"].append(_num(ct[i]))
            out["identifiable"].append(bool(ident[i]))
            out["estimate"].append(_num(est[i]))
            out["std_error"].append(_num(se[i]))
        return out

    def record(
        self,
        run_id: str,
        score: float,
        facts: Sequence[str],
        covs: Mapping[str, Any],
        look: tuple[list[str], Mapping[str, Any] | None] | None,
    ) -> Any:
        """Record a run; with ``look`` = (candidates, statuses), return the look's columns."""
        self.add_run(run_id, score, facts, covs)
        return None if look is None else self.look(*look)

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        """Write the runs and the statistics to ``path`` (an ``.npz``, written atomically)."""
        info, arrays = self.stats.to_arrays()
        mine = {
            "covariates": None if self.covariates is None else list(self.covariates),
            "ids": self.ids,
            "yty": self.yty,
            "runs": self.runs,
        }
        members = {f"stats/{k}": v for k, v in arrays.items()}
        members.update(
            gram=self.gram,
            zty=self.zty,
            with_ss=self.with_ss,
            low=self.low,
            high=self.high,
            pattern_hash=self.fast.hash,
        )
        for name, value in (("stats_info", info), ("engine", mine)):
            text = json.dumps(value, allow_nan=False).encode("utf-8")
            members[name] = np.frombuffer(text, dtype=np.uint8)
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "wb") as fh:
                buf = io.BytesIO()
                np.savez(buf, allow_pickle=False, **members)
                fh.write(buf.getvalue())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            raise StateWriteError(
                exc.errno,
                f"{path}: could not save the store's statistics ({exc.strerror})",
                str(path),
            ) from None
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)

    def load(self, path: Path) -> None:
        """Read :meth:`save`'s file back (the caller checked its checksum)."""
        from cogstats.stats import StreamingStats

        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        info = json.loads(arrays.pop("stats_info").tobytes().decode("utf-8"))
        mine = json.loads(arrays.pop("engine").tobytes().decode("utf-8"))
        self.stats = StreamingStats.from_arrays(
            info, {k[len("stats/") :]: v for k, v in arrays.items() if k.startswith("stats/")}
        )
        self.covariates = None if mine["covariates"] is None else tuple(mine["covariates"])
        self.ids = list(mine["ids"])
        self.col = {f: j for j, f in enumerate(self.ids)}
        self.yty = float(mine["yty"])
        self.runs = int(mine["runs"])
        self.gram = np.ascontiguousarray(arrays["gram"], dtype=np.float64)
        self.zty = np.asarray(arrays["zty"], dtype=np.float64)
        self.with_ss = np.asarray(arrays["with_ss"], dtype=np.float64)
        self.low = np.asarray(arrays["low"], dtype=np.float64)
        self.high = np.asarray(arrays["high"], dtype=np.float64)
        from cogstats.store.incremental import IncrementalRidge

        self.fast = IncrementalRidge(self.gate)
        self.fast.hash = np.asarray(arrays["pattern_hash"], dtype=np.uint64).copy()
        if self.stats.n_runs != self.runs or self.gram.shape[0] != len(self.ids) + (
            0 if self.covariates is None else 1 + len(self.covariates)
        ):
            raise ParameterError(f"{path}: inconsistent store statistics (runs or columns)")


def _num(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def _absent(out: dict[str, list[Any]], f: str, inactive: bool) -> None:
    """Append the row of a candidate never in a run: held (``inactive`` if evicted, retired)."""
    from cogstats import _codes as C

    out["fact_id"].append(f)
    out["decision"].append(C.HOLD)
    out["reason"].append(None)
    out["why"].append(C.WHY_INACTIVE if inactive else C.WHY_MIN_TRIALS)
    for k in ("t_stat", "crater_t", "identifiable", "estimate", "std_error"):
        out[k].append(None)
