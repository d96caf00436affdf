"""The one covariate rule: which ledger columns a gate adjusts for by default.

A gate that adjusts for run difficulty names the covariates it wants (the recommended
gate: ``("difficulty_proxy",)``, the column the simulator writes).  A ledger of one's own
often calls its proxy ``difficulty``.  :func:`choose_covariates` decides, the same way for
the command line, a notebook's ``gate.evaluate`` and the reports:

1. the wanted columns the ledger has are used;
2. when it has none of them and the gate asks for its default, the first column of
   :data:`DIFFICULTY_COLUMNS` that the ledger has is used instead, with a note saying so;
3. when nothing is used although the ledger has a difficulty-like column (a name with
   "difficult", "hard" or "proxy" in it), a note says which, and how to use it.

:data:`TRUE_DIFFICULTY` (``true_difficulty``, the simulator's record of the difficulty it
drew, which no real agent observes) is never chosen by the default, the fallback or a hint:
adjusting for it would credit a gate with information an agent does not have.  Naming it
explicitly still works, for a study of what the proxy costs.

Only the standard library: production code imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DIFFICULTY_COLUMNS",
    "TRUE_DIFFICULTY",
    "CovariateChoice",
    "choose_covariates",
]

#: The columns tried, in order, when a gate's default covariates are absent.
DIFFICULTY_COLUMNS: tuple[str, ...] = ("difficulty_proxy", "difficulty")

#: The simulator's true difficulty: never a default, a fallback or a hint.
TRUE_DIFFICULTY = "true_difficulty"

_LIKE = ("difficult", "hard", "proxy")


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
        The gate's default ``covariates``; the fallback applies only when ``wanted`` is
        that default (a user who named columns gets those, or none).  None: never fall
        back.

    Returns
    -------
    CovariateChoice

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
    >>> note.split("; ")[1].split(":")[0]
    "it has difficulty-like ['task_hardness']"
    """
    want = tuple(wanted)
    cols = list(have)
    present = set(cols)
    use = tuple(c for c in want if c in present)
    if use or not want:
        return CovariateChoice(use)
    if default is not None and want == tuple(default):
        for c in DIFFICULTY_COLUMNS:
            if c in present:
                return CovariateChoice(
                    (c,),
                    note=f"the ledger has no {list(want)}; adjusting for its {c!r} column "
                    "(name others in covariates, or none with an empty list)",
                    fallback=True,
                )
    looks = [c for c in cols if c != TRUE_DIFFICULTY and any(k in c.lower() for k in _LIKE)]
    if not looks:
        return CovariateChoice(())
    return CovariateChoice(
        (),
        note=f"the gate adjusts for {list(want)} where the ledger has it, and it has none; "
        f"it has difficulty-like {looks}: name it in covariates (--covariates {looks[0]}) "
        "to adjust for it",
    )
