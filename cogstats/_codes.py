"""The codes the library and the compiled simulator share, defined once.

Decisions, the reason strings a lesson store records, the ``why`` vocabulary of gate
reports, lesson kinds and statuses, and the integer codes of retrieval policies and
gates inside the simulator's kernel.  Low in the import graph (it imports nothing from
cogstats), so that :mod:`cogstats.gates`, :mod:`cogstats.sim` and the numba kernel all
import it; numba reads module-level integers as compile-time constants.

Nothing here is written anywhere else: a reason string such as ``"eval-gate:harmful"``
or a code such as the UCB1 policy's ``5`` appears in this module only.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "DECISIONS",
    "KINDS",
    "LESSON_STATUSES",
    "LIVE_STATUSES",
    "OUTCOMES",
    "OUTCOME_CODES",
    "OUTCOME_STATUS",
    "REASONS",
    "WHY",
    "outcome_code",
    "outcome_of_code",
]

# ---------------------------------------------------------------------- decisions
#: Every decision a gate can make.
DECISIONS: tuple[str, ...] = ("promote", "evict", "hold", "retire")
PROMOTE, EVICT, HOLD, RETIRE = DECISIONS

#: Decision codes inside the kernel's gate passes (the same values as the lifecycle
#: block's ``OUTCOME_*`` codes below; a test holds them equal).
DECISION_HOLD = 0
DECISION_PROMOTE = 1
DECISION_EVICT_HARMFUL = 2
DECISION_EVICT_NO_LIFT = 3

# ---------------------------------------------------------------------- reasons
# The reason a lesson store records with a status change (an eviction, a retirement, a
# flag); null when the status does not change.  cycgraph's two eviction reasons are
# reproduced exactly; the audit's are the evolving-cognition store's.
HARMFUL = "eval-gate:harmful"
NO_LIFT = "eval-gate:no_lift"
LOW_WIN_RATE = "audit:low_win_rate"
CONTRADICTION = "audit:contradiction"
SUPERSEDED = "audit:superseded"
#: Every reason string a built-in gate writes.
REASONS: tuple[str, ...] = (HARMFUL, NO_LIFT, LOW_WIN_RATE, CONTRADICTION, SUPERSEDED)

#: Reason codes in the simulator's ``evict_reason`` arrays; ``REASON_BY_CODE[code]`` is
#: the string (the retire code is used for the first-decision reason of retired lessons).
REASON_CODE_NONE = 0
REASON_CODE_HARMFUL = 1
REASON_CODE_NO_LIFT = 2
REASON_CODE_RETIRE = 3
REASON_BY_CODE: tuple[str | None, ...] = (None, HARMFUL, NO_LIFT, LOW_WIN_RATE)


def evict_reason_code(reason: str | None) -> int:
    """Return the simulator's code of an eviction reason: harmful, else no_lift.

    A gate of one's own may write any reason string; the simulator records an eviction
    as harmful only under cycgraph's ``eval-gate:harmful`` and as no_lift otherwise.

    Examples
    --------
    >>> evict_reason_code("eval-gate:harmful"), evict_reason_code("mine:stale")
    (1, 2)
    """
    return REASON_CODE_HARMFUL if reason == HARMFUL else REASON_CODE_NO_LIFT


# ---------------------------------------------------------------------- why
# Why a gate made each decision, holds included: one word per row of a GateReport.
WHY_MIN_TRIALS = "min_trials"
WHY_NO_BASELINE = "no_baseline"
WHY_NO_ESTIMATE = "no_estimate"
WHY_NOT_IDENTIFIABLE = "not_identifiable"
WHY_INSUFFICIENT_EVIDENCE = "insufficient_evidence"
WHY_BOTH_SIDES = "both_sides"
WHY_PROMOTE_EVIDENCE = "promote_evidence"
WHY_HARM_EVIDENCE = "harm_evidence"
WHY_MAX_TRIALS = "max_trials"
WHY_MAX_BASELINE_RUNS = "max_baseline_runs"
WHY_MAX_LOOKS = "max_looks"
WHY_MIN_HITS = "min_hits"
WHY_LOW_WIN_RATE = "low_win_rate"
WHY_WIN_RATE_OK = "win_rate_ok"
WHY_CONFIDENCE_DECAY = "confidence_decay"
WHY_CONTRADICTION = "contradiction"
WHY_SUPERSEDED = "superseded"
WHY_INACTIVE = "inactive"
# the lifecycle (the recommended gate, docs/recommended.md)
WHY_HARM_MARGIN = "harm_margin"
WHY_PROMOTE_MARGIN = "promote_margin"
WHY_FUTILITY = "futility"
WHY_NON_INFERIOR = "non_inferior"
WHY_SUSPECT = "suspect"
WHY_CRATER = "crater"
WHY_CLEARED = "cleared"
WHY_SUSPENDED = "suspended"

#: The ``why`` vocabulary: every value a built-in gate writes, with its meaning.
WHY: MappingProxyType[str, str] = MappingProxyType(
    {
        WHY_MIN_TRIALS: "hold: fewer trials than min_trials, or than the test needs (two for "
        "a Welch test)",
        WHY_NO_BASELINE: "hold: too few runs without the lesson to compare against (none for "
        "the margin rule, fewer than two for a Welch test, or the lesson is in every run)",
        WHY_NO_ESTIMATE: "hold: the estimator gave no estimate or standard error for the lesson",
        WHY_NOT_IDENTIFIABLE: "hold: the lesson's inclusion pattern cannot be separated from "
        "another lesson's (or from the covariates)",
        WHY_INSUFFICIENT_EVIDENCE: "hold: tested, and neither promotion nor harm is shown",
        WHY_BOTH_SIDES: "hold: both promotion and harm are shown (cycgraph holds defensively)",
        WHY_PROMOTE_EVIDENCE: "promote: the effect is shown to exceed promote_margin (the "
        "margin rule: the lift reaches it)",
        WHY_HARM_EVIDENCE: "evict (eval-gate:harmful): the effect is shown to be below "
        "-evict_margin",
        WHY_MAX_TRIALS: "evict (eval-gate:no_lift): undecided at max_trials trials",
        WHY_MAX_BASELINE_RUNS: "evict (eval-gate:no_lift): undecided once the baseline has "
        "max_baseline_runs runs",
        WHY_MAX_LOOKS: "evict (eval-gate:no_lift): undecided after its last planned look "
        "(the recommended gate: its information reached max_information)",
        WHY_MIN_HITS: "hold (audit): fewer hits than min_hits",
        WHY_LOW_WIN_RATE: "retire (audit:low_win_rate): wins / hits below min_win_rate",
        WHY_WIN_RATE_OK: "hold (audit): enough hits and a win rate at or above min_win_rate",
        WHY_CONFIDENCE_DECAY: "hold (audit): never retrieved and old enough: its confidence decays",
        WHY_CONTRADICTION: "hold (audit:contradiction): flagged for a person with the entry "
        "it contradicts",
        WHY_SUPERSEDED: "retire (audit:superseded): another entry supersedes it",
        WHY_INACTIVE: "hold (audit): already flagged or retired; not judged again",
        WHY_HARM_MARGIN: "evict (eval-gate:harmful), tier 1: the effect is shown to be below "
        "minus a margin (in units of the estimated noise) at a lenient level",
        WHY_PROMOTE_MARGIN: "promote, tier 1: the effect is shown to exceed a margin (in units "
        "of the estimated noise) at a lenient level",
        WHY_FUTILITY: "evict (eval-gate:no_lift): the effect is shown to be below the "
        "usefulness margin (a futility bound), not for running out of looks",
        WHY_NON_INFERIOR: "admit: the effect is shown not to be harmful beyond a margin (a "
        "non-inferiority bound); no claim that it helps",
        WHY_SUSPECT: "suspend: a lenient test finds the lesson suspect of harm; out of the "
        "prompt except for re-tests",
        WHY_CRATER: "suspend: the lesson arrived with a drop in the score (a lenient test of "
        "the runs it shares with the crater)",
        WHY_CLEARED: "release: re-tests no longer find the suspended lesson suspect",
        WHY_SUSPENDED: "hold: suspended and re-tested; neither convicted nor cleared yet",
    }
)

# ---------------------------------------------------------------------- lessons
#: Lesson kinds in a simulated scenario, in code order.
KINDS: tuple[str, ...] = ("genuine", "neutral", "poison")
KIND_GENUINE = 0
KIND_NEUTRAL = 1
KIND_POISON = 2
KIND_CODES: MappingProxyType[str, int] = MappingProxyType({k: i for i, k in enumerate(KINDS)})

#: Statuses of a lesson in a store (a lesson table's ``status``; null counts as verified):
#: ``candidate`` (on trial), ``admitted`` (in the prompt's verified block without a claim
#: that it helps: screened and not shown harmful, still under test), ``verified``
#: (promoted), ``evicted`` (soft-deleted with a reason; it stays readable), ``retired``,
#: ``suspended`` (out of the prompt on a lenient test, re-tested).
CANDIDATE = "candidate"
ADMITTED = "admitted"
VERIFIED = "verified"
EVICTED = "evicted"
RETIRED = "retired"
SUSPENDED = "suspended"
LESSON_STATUSES: tuple[str, ...] = (CANDIDATE, ADMITTED, VERIFIED, EVICTED, RETIRED, SUSPENDED)
#: The statuses retrieval may inject (null counts as verified).
LIVE_STATUSES: tuple[str, ...] = (CANDIDATE, ADMITTED, VERIFIED)

#: Lesson status codes inside the simulator (a store's candidate / verified / evicted /
#: retired / admitted / suspended; "future" lessons have not arrived yet).
STATUS_FUTURE = 0
STATUS_CANDIDATE = 1
STATUS_VERIFIED = 2
STATUS_EVICTED = 3
STATUS_RETIRED = 4
STATUS_ADMITTED = 5
STATUS_SUSPENDED = 6
STATUS_NAMES: tuple[str, ...] = (
    "future",
    CANDIDATE,
    VERIFIED,
    EVICTED,
    RETIRED,
    ADMITTED,
    SUSPENDED,
)

# ---------------------------------------------------------------------- lifecycle
# The one extensible set of outputs a gate's rule writes for a lesson at a look, with
# the store status each one leads to.  The kernel's decision codes and the simulator's
# event outputs are generated from it (``OUTCOME_CODES``), so a new output (a new entry
# below) needs no new plumbing: append it, never reorder (the codes are positions).
#
# ``hold`` keeps the status; ``promote`` -> verified (shown to help); ``admit`` ->
# admitted (screened, not shown harmful: in the prompt's verified block, still under
# test); ``suspend`` -> suspended (out of the prompt on a lenient test, re-tested);
# ``release`` -> candidate (back on trial after a suspension); ``evict`` -> evicted
# (always with a reason, one of ``EVICT_REASONS``); ``retire`` -> retired.
ADMIT = "admit"
SUSPEND = "suspend"
RELEASE = "release"
#: Every output of a gate's rule, in code order (the first four keep today's codes).
OUTCOMES: tuple[str, ...] = (HOLD, PROMOTE, EVICT, RETIRE, ADMIT, SUSPEND, RELEASE)
#: The store status each output leads to (None: unchanged).
OUTCOME_STATUS: MappingProxyType[str, str | None] = MappingProxyType(
    {
        HOLD: None,
        PROMOTE: VERIFIED,
        EVICT: EVICTED,
        RETIRE: RETIRED,
        ADMIT: ADMITTED,
        SUSPEND: SUSPENDED,
        RELEASE: CANDIDATE,
    }
)
#: The reasons an eviction carries, in code order (each is its own output code).
EVICT_REASONS: tuple[str, ...] = (HARMFUL, NO_LIFT)


def _outcome_table() -> tuple[tuple[str, str | None], ...]:
    """(output, reason) pairs in code order: hold, promote, evict per reason, the rest."""
    rows: list[tuple[str, str | None]] = []
    for name in OUTCOMES:
        if name == EVICT:
            rows.extend((EVICT, r) for r in EVICT_REASONS)
        else:
            rows.append((name, None))
    return tuple(rows)


#: ``(output, reason) -> integer code`` for the kernel and the simulator's events; the
#: codes of hold, promote and the two evictions are today's ``DECISION_*`` values.
OUTCOME_CODES: MappingProxyType[tuple[str, str | None], int] = MappingProxyType(
    {row: i for i, row in enumerate(_outcome_table())}
)
OUTCOME_HOLD = OUTCOME_CODES[(HOLD, None)]
OUTCOME_PROMOTE = OUTCOME_CODES[(PROMOTE, None)]
OUTCOME_EVICT_HARMFUL = OUTCOME_CODES[(EVICT, HARMFUL)]
OUTCOME_EVICT_NO_LIFT = OUTCOME_CODES[(EVICT, NO_LIFT)]
OUTCOME_RETIRE = OUTCOME_CODES[(RETIRE, None)]
OUTCOME_ADMIT = OUTCOME_CODES[(ADMIT, None)]
OUTCOME_SUSPEND = OUTCOME_CODES[(SUSPEND, None)]
OUTCOME_RELEASE = OUTCOME_CODES[(RELEASE, None)]
#: Simulator status codes after each output (kernel-side; -1: unchanged).
OUTCOME_SIM_STATUS: tuple[int, ...] = tuple(
    -1 if OUTCOME_STATUS[name] is None else STATUS_NAMES.index(str(OUTCOME_STATUS[name]))
    for name, _ in _outcome_table()
)


def outcome_code(outcome: str, reason: str | None = None) -> int:
    """Return the integer code of a rule's output (an eviction needs its reason).

    Parameters
    ----------
    outcome : str
        One of :data:`OUTCOMES`.
    reason : str or None
        For ``"evict"``, one of :data:`EVICT_REASONS`; None otherwise.

    Returns
    -------
    int
        The code the kernel and the simulator's events use.

    Examples
    --------
    >>> outcome_code("hold"), outcome_code("promote"), outcome_code("evict", "eval-gate:no_lift")
    (0, 1, 3)
    >>> outcome_code("suspend") == OUTCOME_SUSPEND
    True
    """
    key = (outcome, reason)
    if key not in OUTCOME_CODES:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {list(OUTCOMES)}; got {outcome!r}")
        if outcome == EVICT:
            raise ValueError(
                f"reason must be one of {list(EVICT_REASONS)} for 'evict'; got {reason!r}"
            )
        raise ValueError(f"reason must be None for {outcome!r}; got {reason!r}")
    return OUTCOME_CODES[key]


def outcome_of_code(code: int) -> tuple[str, str | None]:
    """Return the ``(output, reason)`` pair of an integer code.

    Examples
    --------
    >>> outcome_of_code(2)
    ('evict', 'eval-gate:harmful')
    >>> outcome_of_code(OUTCOME_ADMIT)
    ('admit', None)
    """
    table = _outcome_table()
    if not 0 <= code < len(table):
        raise ValueError(f"code must be in [0, {len(table)}); got {code!r}")
    return table[code]


# ---------------------------------------------------------------------- policies
#: Retrieval policy codes in the kernel (registry names in cogstats.retrieval).
POLICY_IN_PROGRESS_FIRST = 0
POLICY_NEWEST_FIRST = 1
POLICY_FEWEST_TRIALS_FIRST = 2
POLICY_RANDOMIZED = 3
POLICY_DESIGNED = 4
POLICY_UCB1 = 5
POLICY_CODES: MappingProxyType[str, int] = MappingProxyType(
    {
        "in_progress_first": POLICY_IN_PROGRESS_FIRST,
        "newest_first": POLICY_NEWEST_FIRST,
        "fewest_trials_first": POLICY_FEWEST_TRIALS_FIRST,
        "randomized": POLICY_RANDOMIZED,
        "designed": POLICY_DESIGNED,
        "ucb1": POLICY_UCB1,
    }
)

# ---------------------------------------------------------------------- simulator
#: The simulation engines: "auto" picks the compiled one when it covers the scenario.
ENGINES: tuple[str, ...] = ("auto", "fast", "reference")
