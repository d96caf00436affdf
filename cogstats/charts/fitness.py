"""Fitness curves: the mean score by run over replicates, or a real ledger's rolling mean.

Display-only aggregation: for simulated runs the curve is the per-run mean of the
replicates' scores and the band either their spread (two quantiles) or the Monte Carlo
error of that mean (mean plus/minus a multiple of sd / sqrt(replicates)); for a
:class:`~cogstats.ledger.Ledger` the curve is the rolling mean of the scores over a window
of runs and the band the rolling quantiles or the rolling mean's standard error.  No
estimate is made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_choice, check_int, check_real
from cogstats.charts._frames import check_multiplier, require_columns
from cogstats.ledger import Ledger

__all__ = ["fitness_curve"]

BANDS = ("spread", "mcse", "none")
_BUILDER = "fitness_curve"


def _aggregate(
    runs: pl.DataFrame,
    value: str,
    keys: list[str],
    band: str,
    quantiles: tuple[float, float],
    multiplier: float,
) -> pl.DataFrame:
    col = pl.col(value).cast(pl.Float64)
    exprs: list[pl.Expr] = [col.mean().alias("mean"), pl.len().alias("replicates")]
    if band == "spread":
        exprs += [
            col.quantile(quantiles[0], "linear").alias("low"),
            col.quantile(quantiles[1], "linear").alias("high"),
        ]
    elif band == "mcse":
        half = multiplier * col.std() / col.count().cast(pl.Float64).sqrt()
        exprs += [(col.mean() - half).alias("low"), (col.mean() + half).alias("high")]
    out = runs.group_by([*keys, "run"]).agg(exprs).sort([*keys, "run"])
    if band == "none":
        out = out.with_columns(
            pl.lit(None, dtype=pl.Float64).alias("low"),
            pl.lit(None, dtype=pl.Float64).alias("high"),
        )
    return out


def _ledger_curve(
    ledger: Ledger,
    window: int,
    band: str,
    quantiles: tuple[float, float],
    multiplier: float,
) -> pl.DataFrame:
    """Run number, score, and the centred rolling mean and band over ``window`` runs."""
    col = pl.col("score")
    half = multiplier * col.rolling_std(window, min_samples=2, center=True)
    count = col.is_not_null().cast(pl.Float64).rolling_sum(window, min_samples=1, center=True)
    frame = pl.DataFrame(
        {
            "run": range(1, len(ledger) + 1),
            "run_id": list(ledger.run_ids),
            "score": ledger.scores,
            "lessons": [len(set(f)) for f in ledger.frame["fact_ids"].to_list()],
        },
        schema={"run": pl.Int64, "run_id": pl.String, "score": pl.Float64, "lessons": pl.Int64},
    )
    exprs = [col.rolling_mean(window, min_samples=1, center=True).alias("mean")]
    if band == "spread":
        exprs += [
            col.rolling_quantile(quantiles[0], "linear", window, min_samples=1, center=True).alias(
                "low"
            ),
            col.rolling_quantile(quantiles[1], "linear", window, min_samples=1, center=True).alias(
                "high"
            ),
        ]
    elif band == "mcse":
        mean = col.rolling_mean(window, min_samples=1, center=True)
        exprs += [
            (mean - half / count.sqrt()).alias("low"),
            (mean + half / count.sqrt()).alias("high"),
        ]
    else:
        exprs += [
            pl.lit(None, dtype=pl.Float64).alias("low"),
            pl.lit(None, dtype=pl.Float64).alias("high"),
        ]
    return frame.with_columns(exprs).fill_nan(None)


def _ledger_chart(
    ledger: Ledger,
    *,
    window: int,
    band: str,
    quantiles: tuple[float, float],
    multiplier: float,
    title: str | None,
    width: int,
    height: int,
) -> alt.LayerChart:
    data = _ledger_curve(ledger, window, band, quantiles, multiplier)
    x = alt.X("run:Q", title="run (position in the ledger)", axis=alt.Axis(tickMinStep=1))
    y_title = "score (0 to 1)"
    layers: list[Any] = []
    if band != "none":
        layers.append(
            alt.Chart(data)
            .mark_area(opacity=0.2, color="#4c78a8")
            .encode(x=x, y=alt.Y("low:Q", title=y_title), y2=alt.Y2("high:Q"))
        )
    layers += [
        alt.Chart(data)
        .mark_point(size=14, opacity=0.45, color="#555555", filled=True)
        .encode(
            x=x,
            y=alt.Y("score:Q", title=y_title, scale=alt.Scale(zero=False)),
            tooltip=["run:Q", "run_id:N", "score:Q", "lessons:Q"],
        ),
        alt.Chart(data)
        .mark_line(strokeWidth=2, color="#4c78a8")
        .encode(x=x, y=alt.Y("mean:Q", title=y_title), tooltip=["run:Q", "mean:Q"]),
    ]
    band_title = {
        "spread": f"band: {quantiles[0]:g}-{quantiles[1]:g} quantiles of the scores in the window",
        "mcse": f"band: rolling mean +/- {multiplier:g} standard errors",
        "none": "",
    }[band]
    subtitle = f"line: rolling mean over {window} runs (centred); points: each run's score"
    return alt.LayerChart(
        layer=layers,
        width=width,
        height=height,
        title=alt.Title(title or "", subtitle=[subtitle, band_title] if band_title else [subtitle]),
    )


def _fitness_options(
    band: str,
    quantiles: Sequence[float],
    mcse_multiplier: float,
    poison_arrival: int | None,
    width: int,
    height: int,
    window: int,
) -> tuple[float, float, float]:
    """Check :func:`fitness_curve`'s options; return the band's quantiles and multiplier."""
    check_choice("band", band, BANDS)
    q = tuple(quantiles)
    if len(q) != 2:
        raise ParameterError(f"quantiles must be two numbers (low, high); got {quantiles!r}")
    lo = cast(float, check_real("quantiles[0]", q[0], minimum=0.0, maximum=1.0))
    hi = cast(float, check_real("quantiles[1]", q[1], minimum=0.0, maximum=1.0))
    if not lo < hi:
        raise ParameterError(f"quantiles must satisfy low < high; got {quantiles!r}")
    multiplier = check_multiplier(mcse_multiplier)
    check_int("poison_arrival", poison_arrival, minimum=1, optional=True)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    check_int("window", window, minimum=1)
    return lo, hi, multiplier


def _simulated_layers(
    runs: pl.DataFrame,
    *,
    band: str,
    bounds: tuple[float, float],
    multiplier: float,
    oracle: bool,
    group: str | None,
    poison_arrival: int | None,
) -> tuple[list[Any], str]:
    """Build the band, curve and rule layers of simulated runs; return them and the band title."""
    lo, hi = bounds
    needed = ["replicate", "run", "score"]
    if oracle:
        needed.append("oracle_score")
    if group is not None:
        needed.append(group)
    require_columns(runs, needed, builder=_BUILDER, argument="runs")
    keys = ["group"] if group is not None else []
    frame = runs.rename({group: "group"}) if group is not None and group != "group" else runs
    if group is not None:
        frame = frame.with_columns(pl.col("group").cast(pl.String))
    parts = [
        _aggregate(frame, "score", keys, band, (lo, hi), multiplier).with_columns(
            pl.lit("score").alias("series")
        )
    ]
    if oracle:
        parts.append(
            _aggregate(frame, "oracle_score", keys, "none", (lo, hi), multiplier).with_columns(
                pl.lit("oracle score").alias("series")
            )
        )
    curves = pl.concat(parts, how="vertical_relaxed").fill_nan(None)
    n_rep = runs["replicate"].n_unique()
    x = alt.X("run:Q", title="run (number since the start)", axis=alt.Axis(tickMinStep=1))
    y_title = f"score, 0 to 1 (mean over {n_rep} replicates)"
    color: Any
    if group is not None:
        color = alt.Color("group:N", title=group)
    else:
        color = alt.Color("series:N", title=None, scale=alt.Scale(domain=["score", "oracle score"]))
    tooltip = [
        *(f"{k}:N" for k in keys),
        "series:N",
        "run:Q",
        "mean:Q",
        "low:Q",
        "high:Q",
        "replicates:Q",
    ]
    layers: list[Any] = []
    band_title = (
        f"{lo:g}-{hi:g} quantiles of the replicates' scores"
        if band == "spread"
        else f"mean +/- {multiplier:g} Monte Carlo standard errors"
    )
    if band != "none":
        band_data = curves.filter(pl.col("series") == "score")
        layers.append(
            alt.Chart(band_data)
            .mark_area(opacity=0.2)
            .encode(
                x=x,
                y=alt.Y("low:Q", title=y_title, scale=alt.Scale(zero=False)),
                y2=alt.Y2("high:Q"),
                color=color,
            )
        )
    line_enc: dict[str, Any] = {
        "x": x,
        "y": alt.Y("mean:Q", title=y_title, scale=alt.Scale(zero=False)),
        "color": color,
        "tooltip": tooltip,
    }
    if oracle:
        line_enc["strokeDash"] = alt.StrokeDash(
            "series:N",
            title=None,
            scale=alt.Scale(domain=["score", "oracle score"], range=[[1, 0], [5, 3]]),
        )
    layers.append(alt.Chart(curves).mark_line(strokeWidth=2).encode(**line_enc))
    if poison_arrival is not None:
        rule = pl.DataFrame({"run": [poison_arrival], "label": ["first run with poison"]})
        layers.append(
            alt.Chart(rule)
            .mark_rule(color="firebrick", strokeDash=[4, 3])
            .encode(x=alt.X("run:Q"), tooltip=["label:N", "run:Q"])
        )
    return layers, band_title


def fitness_curve(
    runs: pl.DataFrame | Ledger,
    *,
    band: str = "spread",
    quantiles: Sequence[float] = (0.1, 0.9),
    mcse_multiplier: float = 2.0,
    oracle: bool = False,
    poison_arrival: int | None = None,
    group: str | None = None,
    title: str | None = None,
    width: int = 480,
    height: int = 260,
    window: int = 10,
) -> alt.LayerChart:
    """Mean score by run over replicates, with a band, optionally against the oracle.

    Parameters
    ----------
    runs : polars.DataFrame or Ledger
        One row per replicate and run with ``replicate``, ``run``, ``score`` (the
        ``runs`` frame of :class:`~cogstats.sim.SimulationResult`); ``oracle_score``
        when ``oracle`` is true; the ``group`` column when given.  Or a real
        :class:`~cogstats.ledger.Ledger`: its scores in ledger order, with their
        centred rolling mean over ``window`` runs and the band of the same window
        (``oracle``, ``poison_arrival`` and ``group`` do not apply).
    band : {"spread", "mcse", "none"}
        ``"spread"``: the ``quantiles`` of the replicates' scores at each run (what one
        replicate looks like); ``"mcse"``: the mean plus/minus ``mcse_multiplier`` Monte
        Carlo standard errors (how precisely the mean curve is known); ``"none"``.
    quantiles : (float, float)
        Lower and upper quantile of the spread band, ``0 <= low < high <= 1``.
    mcse_multiplier : float
        Half-width of the ``"mcse"`` band in standard errors (> 0).
    oracle : bool
        Also draw the mean ``oracle_score`` (the score an oracle retrieval would have
        reached under the same difficulty and noise), dashed, without a band.
    poison_arrival : int, optional
        Draw a vertical rule at this run (the first run that can carry a poison).
    group : str, optional
        A column whose values get one curve each (e.g. a policy name after
        ``pl.concat`` of several results' ``runs`` with a label column).
    title : str, optional
        Chart title.
    width, height : int
        Plot size in pixels.
    window : int
        Runs in the rolling window of a ledger's curve (>= 1; ignored for simulated runs).

    Returns
    -------
    altair.LayerChart
        Layers: the band (``area``, when ``band != "none"``), the mean curves (``line``),
        and the poison rule (``rule``) when asked.  One data row per (group, series, run).
        For a ledger: the band, one point per run, the rolling mean.

    Notes
    -----
    Display-only aggregation (a mean over replicates and a band); nothing is estimated.
    The spread band is exact sample quantiles (polars, linear interpolation); the mcse
    band uses the sample standard deviation (ddof 1).  Checked in
    ``tests/unit/test_charts.py`` against numpy's mean and quantile on the same frame.

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> scenario = Scenario.from_dict({
    ...     "runs": 12, "gate": {"type": "none"},
    ...     "lessons": {"listed": [{"id": "a", "effect": 0.1, "arrives_at_run": 4}]},
    ... })
    >>> result = simulate(scenario, replicates=20, rng=7)
    >>> chart = fitness_curve(result.runs, oracle=True, poison_arrival=4)
    >>> [layer.mark.type for layer in chart.layer]
    ['area', 'line', 'rule']
    >>> len(chart.layer[1].data)  # 12 runs x (score, oracle score)
    24
    >>> ledger = result.ledger(0)
    >>> chart = fitness_curve(ledger, window=5, band="mcse")
    >>> [layer.mark.type for layer in chart.layer], len(chart.data) == len(ledger)
    (['area', 'point', 'line'], True)
    """
    lo, hi, multiplier = _fitness_options(
        band, quantiles, mcse_multiplier, poison_arrival, width, height, window
    )
    if isinstance(runs, Ledger):
        if len(runs) == 0:
            raise ParameterError(f"{_BUILDER}: the ledger has no runs")
        if oracle or group is not None or poison_arrival is not None:
            raise ParameterError(
                f"{_BUILDER}: oracle, group and poison_arrival apply to simulated runs, "
                "not to a Ledger"
            )
        return _ledger_chart(
            runs,
            window=window,
            band=band,
            quantiles=(lo, hi),
            multiplier=multiplier,
            title=title,
            width=width,
            height=height,
        )
    layers, band_title = _simulated_layers(
        runs,
        band=band,
        bounds=(lo, hi),
        multiplier=multiplier,
        oracle=oracle,
        group=group,
        poison_arrival=poison_arrival,
    )
    subtitle = f"band: {band_title}" if band != "none" else ""
    return alt.LayerChart(
        layer=layers, width=width, height=height, title=alt.Title(title or "", subtitle=subtitle)
    )
