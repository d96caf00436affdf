"""Retrieval policies: which lessons go into the next run.

Every policy has ``select(lessons, ledger=None, *, rng=None) -> Selection``.
"""

from cogstats.retrieval._base import STATUSES, RetrievalPolicy, Selection, lesson_table
from cogstats.retrieval.cycgraph import FewestTrialsFirst, InProgressFirst, NewestFirst
from cogstats.retrieval.randomized import Designed, Randomized
from cogstats.retrieval.ucb import UCB1

__all__ = [
    "STATUSES",
    "UCB1",
    "Designed",
    "FewestTrialsFirst",
    "InProgressFirst",
    "NewestFirst",
    "Randomized",
    "RetrievalPolicy",
    "Selection",
    "lesson_table",
]
