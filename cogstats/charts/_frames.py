"""Input checks and display-only reshaping shared by the chart builders.

Nothing here computes a statistic: the helpers check columns, pick and rename them to
names Vega-Lite reads literally, and turn NaN into null so that the renderer skips it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_real
from cogstats.ledger import escape_ids

__all__ = [
    "AXIS_TITLES",
    "axis_title",
    "check_multiplier",
    "natural_key",
    "optional_columns",
    "require_columns",
    "select_as",
]


def require_columns(
    frame: object,
    columns: Iterable[str],
    *,
    builder: str,
    argument: str,
    allow_empty: bool = False,
) -> pl.DataFrame:
    """Check that ``frame`` is a non-empty polars DataFrame holding ``columns``.

    The error names the builder, the argument, every missing column and the columns the
    frame has.

    Examples
    --------
    >>> import polars as pl
    >>> require_columns(pl.DataFrame({"a": [1]}), ["a", "b"], builder="f", argument="cells")
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: f: cells is missing column(s) ['b']; got columns ['a']
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError(
            f"{builder}: {argument} must be a polars DataFrame; got {type(frame).__name__}"
        )
    wanted = list(dict.fromkeys(columns))
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ParameterError(
            f"{builder}: {argument} is missing column(s) {missing}; got columns {frame.columns}"
        )
    if not allow_empty and frame.height == 0:
        raise ParameterError(f"{builder}: {argument} has no rows")
    return frame


def select_as(frame: pl.DataFrame, names: Mapping[str, str]) -> pl.DataFrame:
    """Select the columns ``names`` maps from (values) under plain field names (keys).

    Column names such as ``lessons.listed[0].effect`` contain characters that Vega-Lite
    reads as nested access, so every builder draws from renamed copies.  Float NaN
    becomes null (Vega-Lite drops null points; JSON has no NaN).  Strings are shown
    through :func:`cogstats.ledger.escape_id` (a control character in an id would stop
    the chart renderer; look-alike ids must read differently).
    """
    out = escape_ids(frame.select([pl.col(src).alias(dst) for dst, src in names.items()]))
    floats = [c for c, t in out.schema.items() if t in (pl.Float32, pl.Float64)]
    if floats:
        out = out.with_columns([pl.col(c).fill_nan(None) for c in floats])
    return out


def check_multiplier(value: object) -> float:
    """Validate ``mcse_multiplier`` (a positive half-width in Monte Carlo standard errors)."""
    return cast(float, check_real("mcse_multiplier", value, minimum=0.0, exclusive_minimum=True))


def optional_columns(frame: pl.DataFrame, candidates: Sequence[str]) -> list[str]:
    """Return the names among ``candidates`` that ``frame`` has, in order."""
    return [c for c in candidates if c in frame.columns]


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders ids as people do: ``L2`` before ``L10``.

    Examples
    --------
    >>> sorted(["L10", "L2", "P1", "L1"], key=natural_key)
    ['L1', 'L2', 'L10', 'P1']
    """
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t]


#: Column -> axis title in words, with units, for the metrics and grid axes charts draw.
AXIS_TITLES: dict[str, str] = {
    "time_to_verdict": "time to verdict (runs from arrival to first decision)",
    "poison_time_to_eviction": "time to evict a poison (runs from its arrival)",
    "false_eviction_rate": "false eviction rate (share of genuine lessons tried)",
    "missed_poison": "missed poison (share of poisons live at the end)",
    "poison_recall": "poison recall (share of poisons evicted)",
    "false_promotion_rate": "false promotion rate (share of lessons tried)",
    "regret": "regret (oracle score minus score, per run)",
    "fitness_mean": "mean score (0 to 1)",
    "lessons.listed[0].effect": "true effect of the lesson on the score",
    "runs": "run budget (runs)",
    "gate.min_trials": "minimum trials (runs with the lesson)",
    "gate.decision_rule": "decision rule",
    "gate.evict_margin": "evict margin (score)",
    "gate.promote_margin": "promote margin (score)",
    "retrieval.rest_after_trials": "rest after trials (runs)",
}


def axis_title(column: str) -> str:
    """Return the words (and unit) an axis of ``column`` is titled with; the name otherwise.

    Examples
    --------
    >>> axis_title("time_to_verdict")
    'time to verdict (runs from arrival to first decision)'
    >>> axis_title("my_metric")
    'my metric'
    """
    return AXIS_TITLES.get(column, column.replace("_", " "))


#: Verdict labels, in legend order: a decision, with an eviction's reason after it.
VERDICTS: tuple[str, ...] = ("promote", "evict: harmful", "evict: no_lift", "retire", "evict")
_COLORS = ("#2e7d32", "#c62828", "#ef6c00", "#6a1b9a", "#757575")


def verdict_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``verdict``: the decision, and for evictions the reason's last part.

    Examples
    --------
    >>> f = pl.DataFrame({"decision": ["evict", "promote"],
    ...                   "reason": ["eval-gate:harmful", None]})
    >>> verdict_frame(f)["verdict"].to_list()
    ['evict: harmful', 'promote']
    """
    if "reason" in frame.columns:
        tail = pl.col("reason").cast(pl.String).str.split(":").list.last()
        label = (
            pl.when((pl.col("decision") == "evict") & tail.is_not_null())
            .then(pl.lit("evict: ") + tail)
            .otherwise(pl.col("decision").cast(pl.String))
        )
    else:
        label = pl.col("decision").cast(pl.String)
    return frame.with_columns(label.alias("verdict"))


def verdict_scale(present: list[str]) -> alt.Scale:
    """Return the colour scale of the verdicts present: :data:`VERDICTS`, then others.

    Examples
    --------
    >>> verdict_scale(["evict: harmful", "promote", "hold"]).to_dict()["domain"]
    ['promote', 'evict: harmful', 'hold']
    """
    known = [v for v in VERDICTS if v in present]
    others = sorted(v for v in present if v not in VERDICTS)
    colors = [_COLORS[VERDICTS.index(v)] for v in known]
    return alt.Scale(domain=known + others, range=colors + ["#9e9e9e"] * len(others))
