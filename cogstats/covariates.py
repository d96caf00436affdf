"""The one covariate rule: which ledger columns a gate adjusts for by default.

A gate that adjusts for run difficulty names the covariates it wants (the recommended
gate: ``("difficulty_proxy",)``, the column the simulator writes).  A ledger of one's own
often calls its proxy ``difficulty``.  :func:`choose_covariates` decides, the same way for
the command line, a notebook's ``gate.evaluate`` and the reports:

1. a covariate the user *named* (anything other than the gate's default) that the
   ledger lacks is an error, with "did you mean" (:func:`check_named`, one message for
   the command line, ``gate.evaluate`` and the reports);
2. the wanted columns the ledger has are used;
3. when it has none of the gate's *default* covariates, the first column of
   :data:`DIFFICULTY_COLUMNS` that the ledger has is used instead, with a note saying so
   (a default may be skipped, never silently);
4. when nothing is used although the ledger has a difficulty-like column (a name with
   "difficult", "hard" or "proxy" in it) or a task-family-like one ("family", "category",
   "domain", "task_type"), a note says which, and the flag or parameter that would use
   them (:func:`unused_hint`).

:data:`TRUE_DIFFICULTY` (``true_difficulty``, the simulator's record of the difficulty it
drew, which no real agent observes) is never chosen by the default, the fallback or a hint:
adjusting for it would credit a gate with information an agent does not have.  Naming it
explicitly still works, for a study of what the proxy costs.

Only the standard library: production code imports this module.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cogstats._validation import ParameterError

__all__ = [
    "DIFFICULTY_COLUMNS",
    "FAMILY_LIKE",
    "TRUE_DIFFICULTY",
    "CovariateChoice",
    "check_named",
    "choose_covariates",
    "like_columns",
    "unused_hint",
]

#: The columns tried, in order, when a gate's default covariates are absent.
DIFFICULTY_COLUMNS: tuple[str, ...] = ("difficulty_proxy", "difficulty")

#: The simulator's true difficulty: never a default, a fallback or a hint.
TRUE_DIFFICULTY = "true_difficulty"

_LIKE = ("difficult", "hard", "proxy")
#: Parts of a column name taken as a task family (a grouping of runs worth adjusting for).
FAMILY_LIKE: tuple[str, ...] = ("family", "category", "domain", "task_type")


def like_columns(have: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return the ledger's difficulty-like and task-family-like columns, in ledger order.

    :data:`TRUE_DIFFICULTY` is never among them (no real agent observes it).

    Examples
    --------
    >>> like_columns(["run_index", "difficulty_estimate", "task_family", "true_difficulty"])
    (('difficulty_estimate',), ('task_family',))
    """
    cols = [c for c in have if c != TRUE_DIFFICULTY]
    hard = tuple(c for c in cols if any(k in c.lower() for k in _LIKE))
    family = tuple(c for c in cols if c not in hard and any(k in c.lower() for k in FAMILY_LIKE))
    return hard, family


def _flag(columns: Sequence[str], style: str) -> str:
    if style == "parameter":
        return "covariates=[" + ", ".join(f'"{c}"' for c in columns) + "]"
    if style == "report":
        listed = "[" + ", ".join(f'"{c}"' for c in columns) + "]"
        cli = f"cogstats report --param covariates='{listed}'"
        return f"the report parameter covariates={listed} ({cli})"
    return "--covariates " + " ".join(columns)


def unused_hint(
    have: Iterable[str],
    used: Sequence[str] = (),
    *,
    style: str = "flag",
    how: str | None = None,
) -> str | None:
    """Say which difficulty- or task-family-like columns nothing adjusts for, and how.

    Parameters
    ----------
    have : iterable of str
        The ledger's covariate columns.
    used : sequence of str
        The covariates adjusted for; a hint comes only when this is empty.
    style : {"flag", "parameter", "report"}
        How to name the setting that would use them: ``--covariates X Y`` (the command
        line), ``covariates=["X", "Y"]`` (Python) or ``the report parameter
        covariates=["X", "Y"] (cogstats report --param covariates='["X", "Y"]')`` (a
        report's page, rendered by ``cogstats report`` or papermill).
    how : str, optional
        Replaces the setting, e.g. ``"--gate recommended --covariates X"`` for a gate that
        takes no covariates (``{flag}`` in it is replaced by the setting).

    Returns
    -------
    str or None
        The sentence, or None when something is adjusted for or nothing looks like it.

    Examples
    --------
    >>> print(unused_hint(["difficulty_estimate", "task_family"]))  # doctest: +NORMALIZE_WHITESPACE
    the ledger has difficulty-like column(s) ['difficulty_estimate'] and
    task-family-like column(s) ['task_family'] that nothing adjusts for:
    --covariates difficulty_estimate task_family would use them
    >>> unused_hint(["difficulty_estimate"], style="parameter").split(": ")[-1]
    'covariates=["difficulty_estimate"] would use them'
    >>> unused_hint(["difficulty_estimate"], used=["difficulty_estimate"]) is None
    True
    """
    if style not in ("flag", "parameter", "report"):
        raise ParameterError(f"style must be one of ['flag', 'parameter', 'report']; got {style!r}")
    if tuple(used):
        return None
    hard, family = like_columns(have)
    if not hard and not family:
        return None
    parts = []
    if hard:
        parts.append(f"difficulty-like column(s) {list(hard)}")
    if family:
        parts.append(f"task-family-like column(s) {list(family)}")
    setting = _flag([*hard, *family], style)
    if how is not None:
        setting = how.replace("{flag}", setting)
    return (
        f"the ledger has {' and '.join(parts)} that nothing adjusts for: {setting} would use them"
    )


def check_named(named: Iterable[str], have: Iterable[str], *, what: str = "covariates") -> None:
    """Refuse covariates the user named that the ledger lacks, with "did you mean".

    The one message for the command line (``--covariates``), a gate's ``evaluate`` and
    the reports' ``covariates`` parameter.

    Raises
    ------
    ParameterError
        Naming the absent columns, the nearest ledger column for each, and the ledger's
        covariates.

    Examples
    --------
    >>> try:
    ...     check_named(["difficulty_estimat"], ["difficulty_estimate", "task_family"])
    ... except ParameterError as err:
    ...     print(err)  # doctest: +NORMALIZE_WHITESPACE
    covariates names column(s) ['difficulty_estimat'] that the ledger lacks
    (did you mean 'difficulty_estimate'?); its covariates are
    ['difficulty_estimate', 'task_family']
    """
    cols = list(have)
    present = set(cols)
    missing = [c for c in named if c not in present]
    if not missing:
        return
    near = []
    for c in missing:
        match = difflib.get_close_matches(str(c), cols, n=1, cutoff=0.6)
        if match:
            near.append(f"{match[0]!r}" if len(missing) == 1 else f"{c!r} -> {match[0]!r}")
    hint = f" (did you mean {', '.join(near)}?)" if near else ""
    raise ParameterError(
        f"{what} names column(s) {missing} that the ledger lacks{hint}; its covariates are {cols}"
    )


@dataclass(frozen=True)
class CovariateChoice:
    """The covariates a gate adjusts for on one ledger, and what to tell the user.

    Attributes
    ----------
    columns : tuple of str
        The ledger columns to adjust for (possibly empty).
    note : str or None
        A sentence for the user when the choice is not the plain one: a fallback was
        used, or a difficulty-like column exists that nothing uses.
    fallback : bool
        Whether ``columns`` came from :data:`DIFFICULTY_COLUMNS` instead of the wanted ones.
    """

    columns: tuple[str, ...]
    note: str | None = None
    fallback: bool = False


def choose_covariates(
    wanted: Sequence[str],
    have: Iterable[str],
    *,
    default: Sequence[str] | None = ("difficulty_proxy",),
    style: str = "parameter",
) -> CovariateChoice:
    """Choose the covariates to adjust for among a ledger's columns.

    Parameters
    ----------
    wanted : sequence of str
        The gate's ``covariates`` option.  An empty sequence means none, on purpose: no
        fallback and no note.
    have : iterable of str
        The ledger's covariate columns (``ledger.covariates``).
    default : sequence of str or None
        The gate's default ``covariates``.  ``wanted`` equal to it may be skipped (with
        the fallback and a note); any other ``wanted`` was *named* by the user, and a
        named column the ledger lacks is an error (:func:`check_named`).  None: every
        ``wanted`` counts as named (no fallback).
    style : {"parameter", "flag", "report"}
        How the note names the setting that would use an unused difficulty- or
        task-family-like column (:func:`unused_hint`): ``covariates=[...]`` (Python, the
        default), ``--covariates ...`` (the command line) or ``--param covariates=...``
        (``cogstats report``).

    Returns
    -------
    CovariateChoice

    Raises
    ------
    ParameterError
        When ``wanted`` was named (is not ``default``) and the ledger lacks one of its
        columns, with "did you mean" and the ledger's covariates.

    Examples
    --------
    >>> choose_covariates(("difficulty_proxy",), ["difficulty_proxy", "family"]).columns
    ('difficulty_proxy',)
    >>> c = choose_covariates(("difficulty_proxy",), ["difficulty"])
    >>> c.columns, c.fallback
    (('difficulty',), True)
    >>> choose_covariates(("difficulty_proxy",), ["true_difficulty", "run_index"]).columns
    ()
    >>> note = choose_covariates(("difficulty_proxy",), ["task_hardness"]).note
    >>> note.split(": ")[-1]
    'covariates=["task_hardness"] would use them'
    >>> try:  # a named column the ledger lacks
    ...     choose_covariates(("difficulty_estimat",), ["difficulty_estimate"])
    ... except ParameterError as err:
    ...     print(str(err).split(" (")[1].split(")")[0])
    did you mean 'difficulty_estimate'?
    """
    want = tuple(wanted)
    cols = list(have)
    if not want:
        return CovariateChoice(())
    is_default = default is not None and want == tuple(default)
    if not is_default:
        check_named(want, cols)
        return CovariateChoice(want)
    present = set(cols)
    use = tuple(c for c in want if c in present)
    if use:
        return CovariateChoice(use)
    for c in DIFFICULTY_COLUMNS:
        if c in present:
            return CovariateChoice(
                (c,),
                note=f"the ledger has no {list(want)}; adjusting for its {c!r} column "
                "(name others in covariates, or none with an empty list)",
                fallback=True,
            )
    hint = unused_hint(cols, style=style)
    if hint is None:
        return CovariateChoice(())
    return CovariateChoice((), note=f"the gate's default {list(want)} is not in the ledger; {hint}")
