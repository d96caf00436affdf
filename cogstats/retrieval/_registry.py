"""The retrieval-policy registry and the simulation protocol of a policy.

Every policy is a (frozen dataclass) class with
``select(lessons, ledger=None, *, rng=None, context=None) -> Selection``.  To run in the
simulator's reference engine a policy also has

- ``max_facts``: lessons per run at most;
- ``uniforms_per_run(n_lessons) -> int``: how many pre-drawn uniforms a run needs (at
  least two);
- ``select_with_uniforms(lessons, ledger, uniforms, *, context=None) -> Selection``: the
  selection with the run's uniforms given, laid out as ``uniforms[0]`` an exploration
  coin, ``uniforms[1]`` a prompt-size draw, ``uniforms[2 + i]`` one per pool position
  (deterministic policies ignore them).

:data:`RETRIEVAL_POLICIES` maps names to entries; :func:`get_policy` looks one up (or an
import path ``"package.module:Class"``); :func:`make_policy` builds one.
"""

from __future__ import annotations

from typing import Any

from cogstats._registry import Entry, Registry

__all__ = ["RETRIEVAL_POLICIES", "get_policy", "make_policy", "register_policy"]


def _check_policy(obj: Any) -> str | None:
    if not isinstance(obj, type):
        return f"a retrieval policy must be a class; got {obj!r}"
    if not callable(getattr(obj, "select", None)):
        return "a retrieval policy class needs a select(lessons, ledger=None, *, rng=None) method"
    return None


#: The retrieval policies: name -> :class:`~cogstats._registry.Entry` (``.name``,
#: ``.cls``, ``.options``, ``.description``, ``.kernel``, ``.compiled``).
RETRIEVAL_POLICIES: Registry = Registry(
    "retrieval policy",
    {
        "in_progress_first": "cogstats.retrieval.cycgraph",
        "newest_first": "cogstats.retrieval.cycgraph",
        "fewest_trials_first": "cogstats.retrieval.cycgraph",
        "randomized": "cogstats.retrieval.randomized",
        "designed": "cogstats.retrieval.randomized",
        "ucb1": "cogstats.retrieval.ucb",
    },
    check=_check_policy,
)


def register_policy(
    name: str,
    *,
    description: str,
    options: type | None = None,
    kernel: str | None = None,
) -> Any:
    """Class decorator adding a retrieval policy to :data:`RETRIEVAL_POLICIES`.

    The same arguments as :func:`cogstats.gates.register_gate`: ``kernel`` names the
    policy's compiled piece (a :class:`cogstats.kernel.KernelPolicy`), as
    ``"package.module"`` (its ``PIECE``) or ``"package.module:ATTR"`` (a module holding
    the pieces of several policies, e.g. ``"cogstats.retrieval.kernel:POOL_PIECE"``);
    the entry's ``compiled`` is derived from it.

    Examples
    --------
    >>> get_policy("randomized").kernel
    'cogstats.retrieval.kernel:POOL_PIECE'
    """
    return RETRIEVAL_POLICIES.register(
        name, description=description, options=options, kernel=kernel
    )


def get_policy(name: str) -> Entry:
    """Return the registry entry of a retrieval policy (a name, or ``"package.module:Class"``).

    Examples
    --------
    >>> get_policy("ucb1").cls.__name__
    'UCB1'
    """
    return RETRIEVAL_POLICIES.entry(name)


def make_policy(name: str, **options: Any) -> Any:
    """Build a retrieval policy from its name and options (validated by its class).

    Examples
    --------
    >>> make_policy("in_progress_first", max_facts=4, rest_after_trials=3).max_facts
    4
    """
    return RETRIEVAL_POLICIES.make(name, **options)
