"""Retrieval policies: which lessons go into the next run.

Every policy has ``select(lessons, ledger=None, *, rng=None, context=None) -> Selection``.
:data:`RETRIEVAL_POLICIES` is the registry (``get_policy(name)``, ``make_policy(name,
**options)``; a policy of one's own registers with :func:`register_policy` or is named by
import path ``"package.module:Class"``).
"""

from cogstats.retrieval._base import STATUSES, RetrievalPolicy, Selection, live_lesson_table
from cogstats.retrieval._registry import (
    RETRIEVAL_POLICIES,
    get_policy,
    make_policy,
    register_policy,
)
from cogstats.retrieval.cycgraph import FewestTrialsFirst, InProgressFirst, NewestFirst
from cogstats.retrieval.randomized import Designed, Randomized
from cogstats.retrieval.ucb import UCB1

__all__ = [
    "RETRIEVAL_POLICIES",
    "STATUSES",
    "UCB1",
    "Designed",
    "FewestTrialsFirst",
    "InProgressFirst",
    "NewestFirst",
    "Randomized",
    "RetrievalPolicy",
    "Selection",
    "get_policy",
    "live_lesson_table",
    "make_policy",
    "register_policy",
]
