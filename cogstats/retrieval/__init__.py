"""Retrieval policies: which lessons go into the next run.

Every policy has ``select(lessons, ledger=None, *, rng=None) -> Selection``.
"""

from cogstats.retrieval._base import STATUSES, RetrievalPolicy, Selection, lesson_table
from cogstats.retrieval.cycgraph import FewestTrialsFirst, InProgressFirst, NewestFirst

__all__ = [
    "STATUSES",
    "FewestTrialsFirst",
    "InProgressFirst",
    "NewestFirst",
    "RetrievalPolicy",
    "Selection",
    "lesson_table",
]
