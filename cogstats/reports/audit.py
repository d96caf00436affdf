"""Audit a real ledger, and replay cycgraph's recorded demo gate by gate.

The audit shows attribution by several methods, every gate's decisions, and the lessons
that cannot be told apart.

The loops of the ``ledger_audit`` and ``poison_replay`` reports live here (report
notebooks do not define functions or loop):

- :func:`read_ledger` reads a user's file with a column mapping;
- :func:`audit_ledger` runs the methods and the gates on one ledger and returns a
  :class:`LedgerAudit` (tables, side-by-side decisions, summary, files);
- :func:`replay_gates` replays a recorded ledger run by run through several gates, each
  with its own lesson status, as cycgraph's demo ran its gate after every run.

Gates are named as in the gate registry (:data:`cogstats.gates.GATES`); :func:`_make_gate`
is the one place that turns a name into a gate.  Every gate's rows carry the common report
columns :data:`DECISION_COLUMNS` (``fact_id, gate, decision, reason, why, trials,
estimate, std_error, baseline_runs``), ``why`` saying in one word why the gate decided as
it did.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl

from cogstats._codes import HARMFUL
from cogstats._validation import ParameterError, check_int, suggest
from cogstats.charts import natural_key
from cogstats.covariates import DIFFICULTY_COLUMNS as _DIFFICULTY_COLUMNS
from cogstats.covariates import CovariateChoice, check_named, choose_covariates, unused_hint
from cogstats.estimators import check_identifiability
from cogstats.ledger import Ledger, check_columns
from cogstats.reports.evaluation import compare_attributions

__all__ = [
    "DECISION_COLUMNS",
    "DEFAULT_GATES",
    "DEMO_COLUMNS",
    "DEMO_POLICY",
    "PREFERRED_COMPARISON_GATE",
    "REPORT_GATE_SETTINGS",
    "LedgerAudit",
    "audit_ledger",
    "comparison_gate",
    "decided_text",
    "default_gates",
    "read_ledger",
    "recorded_ledger",
    "rename_demo_columns",
    "replay_gates",
    "report_covariates",
]

#: The gates a ledger audit runs when no gate is registered as ``recommended`` (a gate
#: registry without it, e.g. after ``GATES.unregister``): cycgraph's and the evidence gate
#: (see :func:`default_gates`).
DEFAULT_GATES: tuple[str, ...] = ("cycgraph", "evidence")
#: The gate set beside cycgraph's by default once it is registered (issue 11: "cycgraph
#: and recommended"); until then the evidence gate stands in.
PREFERRED_COMPARISON_GATE = "recommended"
#: Settings reports give a registered gate (every other option keeps the gate's default).
REPORT_GATE_SETTINGS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"evidence": {"method": "ols", "alpha": 0.05, "multiplicity": "bh", "min_trials": 3}}
)
#: Covariate names taken as the run difficulty when the caller names none (the one
#: covariate rule's, :data:`cogstats.covariates.DIFFICULTY_COLUMNS`).
DIFFICULTY_COLUMNS: tuple[str, ...] = _DIFFICULTY_COLUMNS
#: The common columns of every gate's rows, in order.
DECISION_COLUMNS: tuple[str, ...] = (
    "fact_id",
    "gate",
    "decision",
    "reason",
    "why",
    "trials",
    "estimate",
    "std_error",
    "baseline_runs",
)
#: cycgraph's gate policy in its recorded poisoning demo (the gate ran after every run from
#: run 3; retrieval max_facts 12, candidate_slots 6, rest_after_trials 2).
DEMO_POLICY: Mapping[str, Any] = MappingProxyType(
    {
        "decision_rule": "margin",
        "min_trials": 2,
        "promote_margin": 0.05,
        "evict_margin": 0.05,
        "max_trials": 6,
    }
)


# ---------------------------------------------------------------------- reading
def read_ledger(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    format: str | None = None,
) -> Ledger:
    """Read a ledger file whose columns may carry other names.

    Parameters
    ----------
    path : str or Path
        A ledger file (CSV, JSON Lines, Parquet, cycgraph JSON; see
        :meth:`cogstats.Ledger.read`).
    columns : mapping, optional
        Ledger name -> the file's column name, e.g. ``{"run_id": "run", "fact_ids":
        "lessons_in_prompt"}`` for cycgraph's demo CSV; any other name renames a
        covariate (``{"difficulty": "hardness"}``).  Passed to :meth:`cogstats.Ledger.read`
        as it is: its checks and its errors (a file whose required columns carry other
        names gets the mapping that would fix it, for Python, the command line and a
        report's ``columns`` parameter).
    format : str, optional
        As :meth:`cogstats.Ledger.read`.

    Returns
    -------
    Ledger

    Examples
    --------
    >>> from cogstats.reports.resources import resource_path
    >>> ledger = read_ledger(resource_path("data/cycgraph_poison_demo_runs.csv"),
    ...                      columns={"run_id": "run", "fact_ids": "lessons_in_prompt"})
    >>> len(ledger), ledger.run_ids[:2]
    (11, ('1', '2'))
    >>> try:  # a misspelt column: the error names it and the file's columns
    ...     read_ledger(resource_path("data/cycgraph_poison_demo_runs.csv"),
    ...                 columns={"run_id": "run", "fact_ids": "lesons"})
    ... except ParameterError as err:
    ...     print("lesons" in str(err), "lessons_in_prompt" in str(err))
    True True
    """
    return Ledger.read(path, format=format, columns=columns)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- gates
def comparison_gate() -> str:
    """Return the gate reports set beside cycgraph's by default.

    :data:`PREFERRED_COMPARISON_GATE` (``"recommended"``) when the gate registry has it,
    else ``"evidence"``.  Looked up at run time, so a gate registered later (in the
    registry or by importing its module) becomes the default without other edits.

    Examples
    --------
    >>> comparison_gate() in ("recommended", "evidence")
    True
    """
    from cogstats.gates import GATES

    return PREFERRED_COMPARISON_GATE if PREFERRED_COMPARISON_GATE in GATES else "evidence"


def default_gates() -> tuple[str, ...]:
    """Return the gates a ledger audit runs by default: cycgraph's and :func:`comparison_gate`.

    Examples
    --------
    >>> default_gates()[0]
    'cycgraph'
    """
    return ("cycgraph", comparison_gate())


def _make_gate(name: str, *, covariates: Sequence[str] = (), **options: Any) -> Any:
    """Build the gate registered as ``name`` (:data:`cogstats.gates.GATES`) with ``options``.

    The one place where reports turn a gate name into a gate.  Reports give the
    ``"evidence"`` gate settings for auditing a ledger (:data:`REPORT_GATE_SETTINGS`:
    ``ols`` on the run difficulty when the ledger has it, one-sided tests at alpha 0.05 per
    side, Benjamini-Hochberg across the lessons of a pass); every other gate runs with its
    registered defaults, updated by ``options``.  ``covariates`` reach any gate whose
    options have a ``covariates`` field, or an ``options`` mapping for its method (as the
    evidence gate's); other gates do not take them.
    """
    from cogstats._imports import from_data
    from cogstats.gates import get_gate

    with from_data("a report parameter (gates)"):  # imports only --allow-import modules
        entry = get_gate(name)
    settings: dict[str, Any] = dict(REPORT_GATE_SETTINGS.get(name, {}))
    if covariates:
        fields = {f.name for f in entry.fields()}
        if "covariates" in fields:
            settings["covariates"] = list(covariates)
        elif "options" in fields:
            settings["options"] = {
                **dict(settings.get("options") or {}),
                "covariates": list(covariates),
            }
    settings.update(options)
    return entry.make(**settings)


def _gate_names() -> tuple[str, ...]:
    from cogstats.gates import GATES

    return tuple(sorted(GATES))


def _check_gates(gates: Any) -> tuple[str, ...]:
    names = _gate_names()
    if isinstance(gates, str) or not isinstance(gates, Sequence) or not gates:
        raise ParameterError(
            f"gates must be a non-empty list of registered gate names from {list(names)}; "
            f"got {gates!r}"
        )
    for g in gates:
        if isinstance(g, str) and ":" in g:  # a gate of one's own, by import path
            from cogstats._imports import from_data
            from cogstats.gates import get_gate

            with from_data("a report parameter (gates)"):  # only --allow-import modules
                get_gate(g)
        elif g not in names:
            hint = suggest(g, names) if isinstance(g, str) else ""
            raise ParameterError(f"gates: each must be one of {list(names)}; got {g!r}{hint}")
    if len(set(gates)) != len(gates):
        raise ParameterError(f"gates must not repeat a gate; got {list(gates)}")
    return tuple(gates)


def _gate_rows(report: Any, name: str) -> pl.DataFrame:
    """Return a gate report's rows in the common columns (gate's own columns after them)."""
    frame = report.to_frame().with_columns(pl.lit(name).alias("gate"))
    own = [c for c in frame.columns if c not in DECISION_COLUMNS]
    return frame.select(*DECISION_COLUMNS, *own)


def _verdict_label(decision: str | None, reason: str | None) -> str:
    if decision == "evict" and reason:
        return "evict: " + str(reason).split(":")[-1]
    return decision or "not judged"


_SHOWN_IDS = 8
#: The order a summary names a gate's decisions in (harmful evictions first).
_DECISION_ORDER = ("evict", "suspend", "retire", "promote", "admit", "release")


def _decision_rank(decision: Any, word: Any) -> tuple[int, int, str]:
    d = str(decision)
    rank = _DECISION_ORDER.index(d) if d in _DECISION_ORDER else len(_DECISION_ORDER)
    return rank, 0 if word == "harmful" else 1, str(word)


def decided_text(rows: pl.DataFrame) -> str:
    """Say a gate's decisions in its own words: each decision (with its reason) and lessons.

    ``rows`` is a gate report's frame (``fact_id``, ``decision``, ``reason``).

    Decisions other than hold come first (evictions as harmful first, then the other
    evictions, suspensions, retirements, promotions, admissions, releases), each with
    the lessons it names (the first eight, then how many more); holds are counted.

    Examples
    --------
    >>> frame = pl.DataFrame({"fact_id": ["a", "b", "c"],
    ...                       "decision": ["hold", "evict", "promote"],
    ...                       "reason": [None, "eval-gate:harmful", None]})
    >>> decided_text(frame)
    'evict (harmful): b; promote: c; holds 1 lesson'
    """
    parts = []
    keys = rows.select(
        "decision",
        pl.col("reason").str.split(":").list.last().fill_null("").alias("why_word"),
        "fact_id",
    )
    groups = keys.filter(pl.col("decision") != "hold").group_by(
        "decision", "why_word", maintain_order=True
    )
    for (decision, word), g in sorted(groups, key=lambda kv: _decision_rank(*kv[0])):
        ids = sorted(g["fact_id"].to_list(), key=natural_key)
        shown = ", ".join(ids[:_SHOWN_IDS])
        more = f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else ""
        label = f"{decision} ({word})" if word else str(decision)
        parts.append(f"{label}: {shown}{more}")
    held = keys.filter(pl.col("decision") == "hold").height
    if held:
        parts.append(f"holds {held} lesson{'s' if held != 1 else ''}")
    return "; ".join(parts) or "no lessons judged"


# ---------------------------------------------------------------------- audit
@dataclass(frozen=True, repr=False, eq=False)
class LedgerAudit:
    """What :func:`audit_ledger` found on one ledger.

    Attributes
    ----------
    ledger : Ledger
        The ledger audited.
    source : str
        Where it came from, as shown (a file name, never a machine path).
    gates : tuple of str
        The gates run, in order; the last is the comparison gate that colours the charts.
    covariates : tuple of str
        The covariates the regressions and the evidence gate adjusted for.
    attribution : polars.DataFrame
        One row per (method, lesson): ``fact_id, method, estimate, std_error, ci_low,
        ci_high, pvalue, trials, baseline_runs``, then the comparison gate's
        ``decision``, ``reason`` and ``why`` for the lesson.
    decisions : polars.DataFrame
        One row per (gate, lesson): :data:`DECISION_COLUMNS`, then the gate's own
        columns (null for the other gates).
    identifiability : polars.DataFrame
        :func:`~cogstats.estimators.check_identifiability` on the ledger and covariates.
    settings : mapping
        Methods, gate policies, seed.
    notes : tuple of str
        What the reader should know about the covariates (the one covariate rule's
        note, :func:`cogstats.covariates.choose_covariates`): a fallback column used, or
        difficulty- and task-family-like columns nothing adjusts for, with the parameter
        that would use them.  :meth:`findings` ends with them.
    """

    ledger: Ledger
    source: str
    gates: tuple[str, ...]
    covariates: tuple[str, ...]
    attribution: pl.DataFrame
    decisions: pl.DataFrame
    identifiability: pl.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Freeze ``settings`` (a read-only mapping)."""
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    def to_frame(self) -> pl.DataFrame:
        """Return the decisions of every gate (:attr:`decisions`)."""
        return self.decisions

    def evicted_harmful(self, gate: str) -> tuple[str, ...]:
        """Lessons ``gate`` evicts as harmful."""
        d = self._gate(gate)
        return tuple(d.filter(pl.col("reason") == HARMFUL)["fact_id"].to_list())

    def held_harmful(self, gate: str) -> tuple[str, ...]:
        """Lessons ``gate`` holds although its estimate is below zero by two standard errors.

        Held, with ``estimate + 2 * std_error < 0`` (an approximate 95% upper bound below
        zero).  Not a decision of the gate, and not evidence of harm at the gate's error
        rate (among many null lessons some pass this by chance): the charts draw these
        lessons (:meth:`shown_lessons`); the summary names only the gates' decisions.
        """
        d = self._gate(gate).filter(
            (pl.col("decision") == "hold") & (pl.col("estimate") + 2 * pl.col("std_error") < 0)
        )
        return tuple(d["fact_id"].to_list())

    def _gate(self, gate: str) -> pl.DataFrame:
        if gate not in self.gates:
            raise ParameterError(f"gate must be one of {list(self.gates)}; got {gate!r}")
        return self.decisions.filter(pl.col("gate") == gate)

    def side_by_side(self) -> pl.DataFrame:
        """One row per lesson: trials, then each gate's decision and why.

        Examples
        --------
        >>> from cogstats import Ledger
        >>> ledger = Ledger.from_records(
        ...     {"run_id": f"r{i}", "score": 0.5 + 0.1 * (i % 2), "fact_ids": ["a"] * (i % 2)}
        ...     for i in range(8))
        >>> audit_ledger(ledger, gates=["cycgraph", "evidence"], rng=1).side_by_side().columns
        ['fact_id', 'trials', 'cycgraph', 'cycgraph_why', 'evidence', 'evidence_why']
        """
        out = self.decisions.group_by("fact_id", maintain_order=True).agg(pl.col("trials").first())
        order = sorted(out["fact_id"].to_list(), key=natural_key)
        rank = pl.DataFrame({"fact_id": order, "_rank": range(len(order))})
        out = out.join(rank, on="fact_id").sort("_rank").drop("_rank")
        for gate in self.gates:
            d = self._gate(gate)
            labels = [_verdict_label(a, b) for a, b in zip(d["decision"], d["reason"], strict=True)]
            part = pl.DataFrame(
                {"fact_id": d["fact_id"], gate: labels, f"{gate}_why": d["why"]},
                schema={"fact_id": pl.String, gate: pl.String, f"{gate}_why": pl.String},
            )
            out = out.join(part, on="fact_id", how="left")
        return out

    def shown_lessons(self, max_lessons: int = 40) -> list[str]:
        """Return the lessons the charts draw, up to ``max_lessons``, sorted by id.

        They are every lesson a gate decided on or holds as harmful, then the largest
        absolute estimates.
        """
        n = int(check_int("max_lessons", max_lessons, minimum=1))  # type: ignore[arg-type]
        flagged: list[str] = []
        for gate in self.gates:
            d = self._gate(gate).filter(pl.col("decision") != "hold")
            flagged += d["fact_id"].to_list() + list(self.held_harmful(gate))
        ranked = (
            self.attribution.filter(pl.col("estimate").is_not_null())
            .group_by("fact_id")
            .agg(pl.col("estimate").abs().max().alias("size"))
            .sort(["size", "fact_id"], descending=[True, False])["fact_id"]
            .to_list()
        )
        ordered = list(
            dict.fromkeys([*sorted(set(flagged), key=natural_key), *ranked, *self.ledger.fact_ids])
        )
        return sorted(ordered[:n], key=natural_key)

    def key_numbers(self) -> dict[str, Any]:
        """Return the numbers the report's summary block shows (name -> value).

        Examples
        --------
        >>> from cogstats import Ledger
        >>> ledger = Ledger.from_records(
        ...     {"run_id": f"r{i}", "score": 0.5 + 0.1 * (i % 2), "fact_ids": ["a"] * (i % 2)}
        ...     for i in range(8))
        >>> audit_ledger(ledger, rng=1).key_numbers()["runs"]
        8
        """
        numbers: dict[str, Any] = {
            "runs": len(self.ledger),
            "lessons": len(self.ledger.fact_ids),
            "mean score": float(np.mean(self.ledger.scores)),
            "adjusted for": ", ".join(self.covariates) or "nothing",
            "cannot be told apart": int((~self.identifiability["identifiable"]).sum()),
        }
        for gate in self.gates:
            numbers[f"{gate}: evicted as harmful"] = len(self.evicted_harmful(gate))
        return numbers

    def summary(self) -> str:
        """Say what was audited and, per gate, the decisions it made, in its own words."""
        lines = [
            f"Ledger audit of {self.source}: {len(self.ledger)} runs, "
            f"{len(self.ledger.fact_ids)} lessons; covariates: "
            f"{', '.join(self.covariates) or 'none'}"
        ]
        lines += self.findings()
        return "\n".join(lines)

    def findings(self) -> list[str]:
        """One sentence per gate (its decisions), one on identifiability, then the notes.

        A gate's sentence names the lessons of each decision it made, with its reason
        (``evict (harmful)``, ``evict (no_lift)``, ``promote``, ...), and counts the
        lessons it holds; a hold is never called harmful.

        Examples
        --------
        >>> from cogstats import Ledger
        >>> ledger = Ledger.from_records(
        ...     {"run_id": f"r{i}", "score": 0.9 - 0.5 * (i % 2), "fact_ids": ["bad"] * (i % 2)}
        ...     for i in range(12))
        >>> audit_ledger(ledger, gates=["cycgraph"], rng=1).findings()[0]
        'cycgraph: evict (harmful): bad.'
        """
        out = []
        for gate in self.gates:
            out.append(f"{gate}: {decided_text(self._gate(gate))}.")
        bad = self.identifiability.filter(~pl.col("identifiable"))
        out.append(
            f"{bad.height} of {self.identifiability.height} lessons cannot be told apart "
            "from others in this ledger (same injection pattern, collinear, or no contrast)."
        )
        out += [f"Note: {n[:1].upper()}{n[1:]}." for n in self.notes]
        return out

    def write_tables(
        self, directory: str | Path, prefix: str = "ledger_audit", *, raw_csv: bool = False
    ) -> list[Path]:
        """Write ``<prefix>_attribution`` and ``<prefix>_decisions`` as CSV and Parquet.

        An empty ``directory`` writes nothing.  List columns are written as
        ``;``-joined text in the CSV files, and text cells that start with ``=``, ``+``,
        ``-``, ``@``, a tab or a carriage return get a leading ``'`` there, so that a
        spreadsheet shows them instead of running them (``raw_csv=True``: as they are).
        """
        from cogstats.ledger import write_csv

        if directory == "" or directory is None:
            return []
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for stem, frame in (("attribution", self.attribution), ("decisions", self.decisions)):
            base = folder / f"{prefix}_{stem}"
            frame.write_parquet(base.with_suffix(".parquet"))
            flat = frame.with_columns(
                pl.col(c).cast(pl.List(pl.String)).list.join(";")
                for c, t in frame.schema.items()
                if isinstance(t, pl.List)
            )
            write_csv(flat, base.with_suffix(".csv"), raw=raw_csv)
            written += [base.with_suffix(".csv"), base.with_suffix(".parquet")]
        return written

    def __repr__(self) -> str:
        """Return a short text form."""
        return (
            f"LedgerAudit(source={self.source!r}, runs={len(self.ledger)}, "
            f"lessons={len(self.ledger.fact_ids)}, gates={list(self.gates)})"
        )

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(f)}</li>" for f in self.findings())
        return f"<div><strong>{html.escape(repr(self))}</strong><ul>{items}</ul></div>"


def report_covariates(
    ledger: Ledger, covariates: Sequence[str] | None = None, *, report: str | None = None
) -> CovariateChoice:
    """Return the covariates a report adjusts for on ``ledger``, with its note.

    The one covariate rule (:mod:`cogstats.covariates`) as the reports use it: named
    ``covariates`` must all be in the ledger (else an error with "did you mean",
    :func:`~cogstats.covariates.check_named`); none named (None or empty) means the run
    difficulty, the ``difficulty_proxy`` or ``difficulty`` column, when the ledger has
    one.  When nothing is adjusted for although the ledger has difficulty- or
    task-family-like columns, the note names them and the setting that would use them
    (:func:`~cogstats.covariates.unused_hint`): ``covariates=[...]`` in Python, or with
    ``report`` the report's parameter and its command line (``cogstats report <report>
    --param covariates='[...]'``).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.5, "fact_ids": ["a"], "task_family": "math"},
    ...     {"run_id": "r2", "score": 0.7, "fact_ids": [], "task_family": "code"}])
    >>> choice = report_covariates(ledger)
    >>> choice.columns, choice.note.split(": ")[-1]
    ((), 'covariates=["task_family"] would use them')
    >>> report_covariates(ledger, ["task_family"]).columns
    ('task_family',)
    """
    if covariates is None or (not isinstance(covariates, str) and len(covariates) == 0):
        # the audit's default is either difficulty column: no note for the fallback
        used = choose_covariates(DIFFICULTY_COLUMNS[:1], ledger.covariates).columns
        hint = unused_hint(
            ledger.covariates, used, style="parameter" if report is None else "report"
        )
        if hint is not None and report is not None:
            hint = hint.replace("cogstats report --param", f"cogstats report {report} --param")
        return CovariateChoice(used, hint)
    if isinstance(covariates, str) or not all(isinstance(c, str) for c in covariates):
        raise ParameterError(f"covariates must be a list of column names; got {covariates!r}")
    check_named(covariates, ledger.covariates)  # "did you mean", as everywhere
    return CovariateChoice(tuple(covariates))


def audit_ledger(
    ledger: Ledger,
    *,
    gates: Sequence[str] | None = None,
    covariates: Sequence[str] | None = None,
    source: str = "ledger",
    rng: Any = None,
    report: str | None = None,
) -> LedgerAudit:
    """Attribution by several methods and every gate's decisions on one ledger.

    Methods, side by side: ``lift`` (cycgraph's statistic: mean with the lesson minus
    mean without), ``ols`` and ``ridge`` regressing the score on every lesson and the
    covariates (ridge's penalty by generalized cross-validation).  Gates: each name of
    ``gates`` (see :func:`_make_gate`), all judging every lesson of the ledger.

    Parameters
    ----------
    ledger : Ledger
        The runs.
    gates : sequence of str, optional
        Registered gate names (:data:`cogstats.gates.GATES`) or import paths
        (``"package.module:Class"``); default :func:`default_gates` (cycgraph's and the
        ``recommended`` gate).  The last
        one colours the attribution rows (its ``decision``/``reason``/``why``).
    covariates : sequence of str, optional
        Ledger covariates to adjust for; default: the run difficulty when the ledger
        has a ``difficulty_proxy`` or ``difficulty`` column, else none (and when the
        ledger has other difficulty- or task-family-like columns, :attr:`LedgerAudit.notes`
        names them and the parameter that would use them).  A named column the ledger
        lacks is an error with "did you mean" (:func:`cogstats.covariates.check_named`).
    source : str
        How to name the ledger in the summary (a file name).
    rng : seed or Generator, optional
        For methods that draw.
    report : str, optional
        The report running the audit: the notes name the setting as that report's
        parameter (``cogstats report <report> --param covariates='[...]'``) instead of
        ``covariates=[...]`` (:func:`report_covariates`).

    Returns
    -------
    LedgerAudit

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger
    >>> rng = np.random.default_rng(3)
    >>> inject = rng.random((60, 3)) < 0.5
    >>> score = np.clip(0.6 - 0.3 * inject[:, 2] + rng.normal(0, 0.05, 60), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": str(i), "score": float(score[i]),
    ...      "fact_ids": [f for f, on in zip(["a", "b", "bad"], inject[i]) if on]}
    ...     for i in range(60))
    >>> audit = audit_ledger(ledger, gates=["cycgraph", "evidence"], rng=1)
    >>> audit.evicted_harmful("cycgraph"), audit.evicted_harmful("evidence")
    (('bad',), ('bad',))
    >>> sorted(audit.decisions.columns[:9]) == sorted(DECISION_COLUMNS)
    True
    """
    if not isinstance(ledger, Ledger):
        raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
    names = _check_gates(default_gates() if gates is None else gates)
    choice = report_covariates(ledger, covariates, report=report)
    covs, notes = choice.columns, (() if choice.note is None else (choice.note,))
    if len(ledger) < 2 or not ledger.fact_ids:
        raise ParameterError(
            f"the ledger needs at least 2 runs and one lesson to audit; it has {len(ledger)} "
            f"run(s) and {len(ledger.fact_ids)} lesson(s)"
        )
    label = "" if not covs else " + " + " + ".join(covs)
    methods: dict[str, dict[str, Any]] = {
        "lift": {},
        f"ols{label}": {"method": "ols", **({"covariates": list(covs)} if covs else {})},
        f"ridge{label}": {"method": "ridge", **({"covariates": list(covs)} if covs else {})},
    }
    streams = np.random.default_rng(rng).spawn(len(names) + 1)
    rows = compare_attributions(ledger, methods, rng=streams[0])
    frames = []
    policies = {}
    for name, stream in zip(names, streams[1:], strict=True):
        gate = _make_gate(name, covariates=covs)
        to_policy = getattr(gate, "to_policy", None)
        policies[name] = to_policy() if callable(to_policy) else repr(gate)
        if name == "cycgraph":
            report = gate.evaluate(ledger)
        else:
            report = gate.evaluate(ledger, rng=stream)
        frames.append(_gate_rows(report, name))
    decisions = pl.concat(frames, how="diagonal_relaxed")
    last = decisions.filter(pl.col("gate") == names[-1]).select(
        "fact_id", "decision", "reason", "why"
    )
    attribution = rows.join(last, on="fact_id", how="left")
    ident = check_identifiability(ledger, covariates=covs)
    return LedgerAudit(
        ledger=ledger,
        source=source,
        gates=names,
        covariates=covs,
        attribution=attribution,
        decisions=decisions,
        identifiability=ident,
        settings={"methods": methods, "gates": policies},
        notes=notes,
    )


# ---------------------------------------------------------------------- replay
def _recorded(value: Any) -> bool:
    return str(value).strip().lower() in ("yes", "true", "1")


#: The columns of cycgraph's recorded demo that :func:`replay_gates` reads, per file.
DEMO_COLUMNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "runs": ("run", "score", "lessons_in_prompt", "recorded"),
        "lessons": ("lesson", "kind", "first_gate_as_candidate"),
    }
)


def rename_demo_columns(
    frame: pl.DataFrame, columns: Mapping[str, str] | None, file: str
) -> pl.DataFrame:
    """Rename a recorded-demo file's columns to the names :func:`replay_gates` reads.

    Parameters
    ----------
    frame : polars.DataFrame
        The runs or the lessons file as read.
    columns : mapping, optional
        The demo's column name -> the file's column name (one mapping may serve both
        files: names the file does not need are ignored).
    file : {"runs", "lessons"}
        Which file ``frame`` is.

    Returns
    -------
    polars.DataFrame
        ``frame`` with its columns renamed; a column the file still lacks is an error
        naming it, the file's columns and the ``columns`` entry that would map it.

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"run": [1], "fitness": [0.5], "lessons_in_prompt": ["a"],
    ...                      "recorded": ["yes"]})
    >>> rename_demo_columns(runs, {"score": "fitness"}, "runs").columns
    ['run', 'score', 'lessons_in_prompt', 'recorded']
    >>> try:
    ...     rename_demo_columns(runs, {}, "runs")
    ... except ValueError as err:
    ...     print(err)  # doctest: +NORMALIZE_WHITESPACE
    runs file: missing column(s) ['score']; got columns ['run', 'fitness',
    'lessons_in_prompt', 'recorded']; map your names with the report's columns
    parameter, e.g. columns={"score": "YOUR_COLUMN"}
    """
    if file not in DEMO_COLUMNS:
        raise ParameterError(f"file must be one of {list(DEMO_COLUMNS)}; got {file!r}")
    mapping = check_columns(columns)
    wanted = DEMO_COLUMNS[file]
    rename = {
        mine: theirs
        for theirs, mine in mapping.items()
        if theirs in wanted and mine in frame.columns and mine != theirs
    }
    out = frame.rename(rename)
    missing = [c for c in wanted if c not in out.columns]
    if missing:
        example = ", ".join(f'"{c}": "YOUR_COLUMN"' for c in missing)
        raise ParameterError(
            f"{file} file: missing column(s) {missing}; got columns {frame.columns}; map your "
            f"names with the report's columns parameter, e.g. columns={{{example}}}"
        )
    return out


def recorded_ledger(runs: pl.DataFrame) -> Ledger:
    """Return the ledger of a recorded demo's runs: the rows with ``recorded`` yes, in run order.

    ``runs`` has the columns of :func:`replay_gates` (``run``, ``score``,
    ``lessons_in_prompt`` space-separated, ``recorded``); run ids are the run numbers as
    text.

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"run": [1, 2], "score": [0.0, 0.9],
    ...                      "lessons_in_prompt": [None, "a b"], "recorded": ["no", "yes"]})
    >>> recorded_ledger(runs).frame.rows()
    [('2', 0.9, ['a', 'b'])]
    """
    from cogstats.charts import require_columns

    require_columns(
        runs,
        ["run", "score", "lessons_in_prompt", "recorded"],
        builder="recorded_ledger",
        argument="runs",
        allow_empty=True,
    )
    ledger = Ledger()
    for r in runs.sort("run").iter_rows(named=True):
        if _recorded(r["recorded"]):
            ledger.record(str(r["run"]), float(r["score"]), (r["lessons_in_prompt"] or "").split())
    return ledger


def replay_gates(
    runs: pl.DataFrame,
    lessons: pl.DataFrame,
    gates: Mapping[str, Any] | Sequence[str],
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    from_run: int = 1,
) -> pl.DataFrame:
    """Replay a recorded ledger run by run through several gates, each on its own.

    After each run from ``from_run`` on, every gate judges the lessons that are its
    candidates then (arrived as candidates, not yet promoted or evicted by that gate) on
    the recorded runs so far.  The prompts are the recorded ones: a gate's decisions do
    not change which lessons later runs carried (that would need the agent itself).

    Parameters
    ----------
    runs : polars.DataFrame
        ``run`` (int), ``score``, ``lessons_in_prompt`` (space-separated ids, may be
        null) and ``recorded`` (``"yes"``/``"no"``: runs that were not recorded do not
        enter the ledger), one row per run in order.
    lessons : polars.DataFrame
        ``lesson``, ``kind`` and ``first_gate_as_candidate`` (the first gate, by run,
        at which the lesson is a candidate).
    gates : mapping or sequence of str
        Name -> gate object (anything with ``evaluate(ledger, candidates)``), or gate
        names from the gate registry (:data:`cogstats.gates.GATES`).
    options : mapping, optional
        For named gates: name -> constructor options (e.g. ``{"cycgraph":
        DEMO_POLICY}``).
    from_run : int
        The first run after which the gates run.

    Returns
    -------
    polars.DataFrame
        One row per (gate, after_run, candidate): ``gate, after_run, fact_id, kind,
        decision, reason, why, trials, estimate, std_error, baseline_runs``.

    Examples
    --------
    >>> import polars as pl
    >>> from cogstats.gates import CycgraphGate
    >>> runs = pl.DataFrame({"run": [1, 2, 3], "score": [0.9, 0.4, 0.5],
    ...                      "lessons_in_prompt": ["a", "a b", None],
    ...                      "recorded": ["yes"] * 3})
    >>> lessons = pl.DataFrame({"lesson": ["a", "b"], "kind": ["genuine", "poison"],
    ...                         "first_gate_as_candidate": [1, 2]})
    >>> gate = CycgraphGate(decision_rule="margin", min_trials=1)
    >>> out = replay_gates(runs, lessons, {"margin": gate})
    >>> out.filter(pl.col("decision") != "hold").select("after_run", "fact_id", "decision").rows()
    [(2, 'b', 'evict'), (3, 'a', 'promote')]
    """
    from cogstats.charts import require_columns

    require_columns(
        runs,
        ["run", "score", "lessons_in_prompt", "recorded"],
        builder="replay_gates",
        argument="runs",
    )
    require_columns(
        lessons,
        ["lesson", "kind", "first_gate_as_candidate"],
        builder="replay_gates",
        argument="lessons",
    )
    if not isinstance(gates, Mapping):
        extra = dict(options or {})
        unknown = [k for k in extra if k not in gates]
        if unknown:
            raise ParameterError(f"options names gate(s) {unknown} that are not in gates")
        gates = {n: _make_gate(n, **dict(extra.get(n, {}))) for n in _check_gates(gates)}
    if not gates:
        raise ParameterError(f"gates must be a non-empty mapping name -> gate; got {gates!r}")
    first = int(check_int("from_run", from_run, minimum=1))  # type: ignore[arg-type]
    kinds = dict(zip(lessons["lesson"].to_list(), lessons["kind"].to_list(), strict=True))
    arrive = dict(
        zip(lessons["lesson"].to_list(), lessons["first_gate_as_candidate"].to_list(), strict=True)
    )
    status: dict[str, dict[str, str]] = {name: {} for name in gates}
    ledger = Ledger()
    frames = []
    for r in runs.sort("run").iter_rows(named=True):
        prompt = (r["lessons_in_prompt"] or "").split()
        if _recorded(r["recorded"]):
            ledger.record(str(r["run"]), float(r["score"]), prompt)
        if r["run"] < first or len(ledger) == 0:
            continue
        for name, gate in gates.items():
            candidates = [
                f
                for f in lessons["lesson"].to_list()
                if arrive[f] <= r["run"] and f not in status[name]
            ]
            if not candidates:
                continue
            rows = _gate_rows(gate.evaluate(ledger, candidates), name)
            for d in rows.iter_rows(named=True):
                if d["decision"] != "hold":
                    status[name][d["fact_id"]] = d["decision"]
            frames.append(
                rows.select(DECISION_COLUMNS).with_columns(
                    pl.lit(int(r["run"]), dtype=pl.Int64).alias("after_run"),
                    pl.col("fact_id").replace_strict(kinds, default=None).alias("kind"),
                )
            )
    if not frames:
        raise ParameterError("replay_gates: no gate ran (no recorded run at or after from_run)")
    out = pl.concat(frames, how="vertical_relaxed")
    return out.select(
        "gate",
        "after_run",
        "fact_id",
        "kind",
        *[c for c in DECISION_COLUMNS if c not in ("fact_id", "gate")],
    )
