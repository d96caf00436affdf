"""Group-sequential error spending: boundaries for a planned number of looks.

:func:`spending_boundaries` computes Lan-DeMets error-spending boundaries for looks at
planned information fractions, by the recursive numerical integration of Armitage,
McPherson & Rowe (1969) as set out in Jennison & Turnbull (2000), ch. 19.  Gates use it
(``EvidenceGate(sequential="group")``); it is not an estimator.

The spending functions are a registry, :data:`SPENDING` (name -> entry with the function,
its options dataclass and a description), like the gates' and the retrieval policies':

- ``obrien_fleming``: Lan & DeMets' O'Brien-Fleming type, ``2 - 2 Phi(z_{1 - a / 2} /
  sqrt(t))``: spends almost nothing early, nearly the power of one final test;
- ``pocock``: Lan & DeMets' Pocock type, ``a log(1 + (e - 1) t)``: spends about evenly;
- ``hsd``: the Hwang-Shih-DeCani family, ``a (1 - exp(-gamma t)) / (1 - exp(-gamma))``
  (``a t`` at ``gamma = 0``), option ``gamma`` in [-40, 40]: ``gamma = -4`` is close to
  O'Brien-Fleming, ``gamma = 1`` to Pocock, and values between move verdicts earlier at
  some power.

Each function maps information fractions ``t`` in (0, 1] and a one-sided error ``a`` to
the cumulative one-sided error spent by ``t`` (``a`` at ``t = 1``).

**Cache.**  Solving for 100 looks takes seconds (a root search over a numerical
integration per look), which a gate would pay at its first decision in every fresh
process.  So :func:`spending_boundaries` keeps each solution, keyed on every input (the
fractions and alpha bit for bit, the spending function and its options, the sides and
the grid points), in three places, looked up in order: this process's memory; the table
shipped with cogstats (``spending_table.json`` beside this module: the defaults of the
built-in gates, rebuilt by ``python docs/scripts/spending_table.py``); and a per-user
folder (``$COGSTATS_CACHE_DIR``, else ``$XDG_CACHE_HOME/cogstats``, else
``~/.cache/cogstats``; ``spending/<key>.json``, written atomically, skipped when it cannot
be written).  An entry is used only when its inputs equal the call's and its numbers are
well formed; anything else is recomputed.  ``cache=False`` always computes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import special

from cogstats._registry import Registry
from cogstats._results import frame_text, html_block
from cogstats._validation import ParameterError, check_int, check_probability, check_real

__all__ = [
    "SPENDING",
    "HSDOptions",
    "NoOptions",
    "SpendingBoundaries",
    "hsd_spending",
    "obrien_fleming_spending",
    "planned_look_levels",
    "pocock_spending",
    "spending_boundaries",
]

#: The spending functions: name -> :class:`~cogstats._registry.Entry` (``.function``,
#: ``.options``, ``.description``).  ``SPENDING.make(name, **options)`` binds the options.
SPENDING: Registry = Registry("spending function", {})


@dataclass(frozen=True)
class NoOptions:
    """A spending function without options."""


@dataclass(frozen=True)
class HSDOptions:
    """Options of the Hwang-Shih-DeCani family.

    Parameters
    ----------
    gamma : float
        Shape in [-40, 40] (gsDesign's range): -4 is close to O'Brien-Fleming, 1 to
        Pocock, 0 spends linearly in the information fraction.
    """

    gamma: float = -4.0

    def __post_init__(self) -> None:
        """Validate ``gamma``."""
        object.__setattr__(
            self, "gamma", check_real("gamma", self.gamma, minimum=-40.0, maximum=40.0)
        )


# scipy.special rather than scipy.stats: the gates import this module, and scipy.stats
# costs the production path about 0.3 s and 30 MB at start (benchmark P1)
def _norm_sf(x: Any) -> Any:
    return special.ndtr(-np.asarray(x, dtype=float))


def _norm_isf(p: Any) -> Any:
    return -special.ndtri(np.asarray(p, dtype=float))


def _norm_pdf(x: Any) -> Any:
    x = np.asarray(x, dtype=float)
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


@SPENDING.register(
    "obrien_fleming",
    options=NoOptions,
    description="Lan-DeMets O'Brien-Fleming type: spends almost nothing at early looks",
)
def obrien_fleming_spending(t: np.ndarray, alpha: float) -> np.ndarray:
    """One-sided error spent by fractions ``t``: ``2 - 2 Phi(z_{1 - alpha / 2} / sqrt(t))``.

    Examples
    --------
    >>> round(float(obrien_fleming_spending(np.array([1.0]), 0.025)[0]), 12)
    0.025
    """
    t = np.asarray(t, dtype=float)
    return np.asarray(2.0 * _norm_sf(_norm_isf(alpha / 2.0) / np.sqrt(t)))


@SPENDING.register(
    "pocock",
    options=NoOptions,
    description="Lan-DeMets Pocock type: spends about evenly over the looks",
)
def pocock_spending(t: np.ndarray, alpha: float) -> np.ndarray:
    """One-sided error spent by fractions ``t``: ``alpha log(1 + (e - 1) t)``.

    Examples
    --------
    >>> round(float(pocock_spending(np.array([1.0]), 0.025)[0]), 15)
    0.025
    """
    t = np.asarray(t, dtype=float)
    return np.asarray(alpha * np.log1p((math.e - 1.0) * t))


@SPENDING.register(
    "hsd",
    options=HSDOptions,
    description="Hwang-Shih-DeCani family (option gamma): between O'Brien-Fleming and Pocock",
)
def hsd_spending(t: np.ndarray, alpha: float, gamma: float = -4.0) -> np.ndarray:
    """One-sided error spent by fractions ``t``: ``alpha (1 - e^(-gamma t)) / (1 - e^(-gamma))``.

    ``alpha t`` at ``gamma = 0`` (the limit).  Written with ``expm1`` so that small
    ``|gamma|`` keeps full precision.

    Examples
    --------
    >>> [round(float(v), 6) for v in hsd_spending(np.array([0.5, 1.0]), 0.025, gamma=0.0)]
    [0.0125, 0.025]
    """
    t = np.asarray(t, dtype=float)
    if gamma == 0.0:
        return np.asarray(alpha * t)
    return np.asarray(alpha * np.expm1(-gamma * t) / np.expm1(-gamma))


def _simpson_grid(lo: float, hi: float, points: int) -> tuple[np.ndarray, np.ndarray]:
    z = np.linspace(lo, hi, points)
    h = z[1] - z[0]
    w = np.ones(points)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return z, w * h / 3.0


@dataclass(frozen=True, repr=False, eq=False)
class SpendingBoundaries:
    """Lan-DeMets group-sequential boundaries for a planned set of looks.

    Reject at look ``k`` when ``|Z_k| >= z_boundaries[k]`` (two-sided) or ``Z_k >=
    z_boundaries[k]`` (one-sided), ``Z_k`` the usual fixed-sample z-statistic of all data
    so far.  Under the null the probability of crossing by look ``k`` is
    ``cumulative_alpha[k]``.

    Attributes
    ----------
    information_fractions : tuple of float
        Planned information (e.g. runs) at each look over the maximum, increasing, in (0, 1].
    z_boundaries : tuple of float
        Critical values per look (``inf`` where nothing is spent).
    cumulative_alpha : tuple of float
        Error spent by each look (both sides together when ``sides == 2``).
    alpha : float
        Total error at information fraction 1.
    spending : str
        The spending function's name in :data:`SPENDING`.
    sides : int
        1 or 2.
    grid_points : int
        Simpson points per look in the numerical integration.
    spending_options : mapping
        The spending function's options (e.g. ``{"gamma": -2.0}`` for ``hsd``).
    """

    information_fractions: tuple[float, ...]
    z_boundaries: tuple[float, ...]
    cumulative_alpha: tuple[float, ...]
    alpha: float
    spending: str
    sides: int
    grid_points: int
    spending_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Freeze ``spending_options`` (a read-only mapping)."""
        object.__setattr__(self, "spending_options", MappingProxyType(dict(self.spending_options)))

    @property
    def nominal_pvalues(self) -> tuple[float, ...]:
        """Fixed-sample p-value of each boundary (two-sided when ``sides == 2``)."""
        return tuple(float(self.sides * _norm_sf(c)) for c in self.z_boundaries)

    def to_frame(self) -> pl.DataFrame:
        """Return the boundaries as a table, one row per look.

        Columns ``look``, ``information_fraction``, ``z_boundary``, ``nominal_pvalue``,
        ``alpha_spent`` (this look), ``cumulative_alpha``.
        """
        cum = np.asarray(self.cumulative_alpha)
        return pl.DataFrame(
            {
                "look": pl.Series(np.arange(1, len(cum) + 1), dtype=pl.Int64),
                "information_fraction": list(self.information_fractions),
                "z_boundary": list(self.z_boundaries),
                "nominal_pvalue": list(self.nominal_pvalues),
                "alpha_spent": np.diff(np.concatenate([[0.0], cum])),
                "cumulative_alpha": cum,
            }
        )

    def crossing_probability(self, drift: float = 0.0) -> float:
        """Probability of crossing a boundary at some look when ``E[Z at fraction 1] = drift``.

        ``drift = 0`` returns the type I error (the total spent); a positive drift gives the
        power.  A single final z-test at the same total alpha has power ``Phi(drift -
        z_{1 - alpha / sides})`` (plus the far tail when two-sided), which this is close to
        for O'Brien-Fleming spending.  Same numerical integration as the boundaries.

        Examples
        --------
        >>> b = spending_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], alpha=0.05)
        >>> round(b.crossing_probability(0.0), 6)
        0.05
        """
        drift = cast(float, check_real("drift", drift))
        probs = _crossing_by_look(
            np.asarray(self.information_fractions),
            np.asarray(self.z_boundaries),
            self.sides,
            drift,
            self.grid_points,
        )
        return float(probs.sum())

    def summary(self) -> str:
        """Return a text report: the settings and the table."""
        head = f"SpendingBoundaries ({self.spending}, alpha={self.alpha!r}, sides={self.sides})"
        return f"{head}\n{frame_text(self.to_frame())}"

    def __repr__(self) -> str:
        """Return a short text form."""
        z = ", ".join(f"{c:.4f}" for c in self.z_boundaries)
        return f"SpendingBoundaries({self.spending}, sides={self.sides}, z=[{z}])"

    def _repr_html_(self) -> str:
        settings = {
            "spending": self.spending,
            **self.spending_options,
            "alpha": self.alpha,
            "sides": self.sides,
        }
        return html_block("SpendingBoundaries", settings, self.to_frame())


def _crossing_by_look(
    t: np.ndarray, c: np.ndarray, sides: int, drift: float, points: int
) -> np.ndarray:
    """Probability of first crossing at each look (recursive numerical integration)."""
    out = np.zeros(len(t))
    out[0] = _norm_sf(c[0] - drift * math.sqrt(t[0]))
    if sides == 2:
        out[0] += special.ndtr(-c[0] - drift * math.sqrt(t[0]))
    z, w, f = _continuation(t[0], c[0], sides, drift, points, None)
    for k in range(1, len(t)):  # a loop over looks (a handful), not over runs
        out[k] = _exit_probability(z, w * f, t[k - 1], t[k], c[k], sides, drift)
        z, w, f = _continuation(t[k], c[k], sides, drift, points, (z, w * f, t[k - 1]))
    return out


def _exit_probability(
    z: np.ndarray,
    g: np.ndarray,
    t_prev: float,
    t_now: float,
    c: float,
    sides: int,
    drift: float,
) -> float:
    """``P(not stopped before, crosses c now)`` given the weighted sub-density ``g`` on ``z``."""
    if not np.isfinite(c):
        return 0.0
    sd = math.sqrt(t_now - t_prev)
    mean = z * math.sqrt(t_prev) + drift * (t_now - t_prev)
    up = _norm_sf((c * math.sqrt(t_now) - mean) / sd)
    if sides == 2:
        up = up + special.ndtr((-c * math.sqrt(t_now) - mean) / sd)
    return float(g @ up)


def _continuation(
    t_now: float,
    c: float,
    sides: int,
    drift: float,
    points: int,
    previous: tuple[np.ndarray, np.ndarray, float] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grid, Simpson weights and sub-density of ``Z`` on the continuation region at a look."""
    centre = drift * math.sqrt(t_now)
    top = min(c, centre + 9.0) if np.isfinite(c) else centre + 9.0
    bottom = max(-c, centre - 9.0) if sides == 2 and np.isfinite(c) else centre - 9.0
    if top <= bottom:  # the continuation region holds no probability worth integrating
        bottom, top = centre - 1e-9, centre + 1e-9
    z, w = _simpson_grid(bottom, top, points)
    if previous is None:
        return z, w, _norm_pdf(z - centre)
    z_prev, g_prev, t_prev = previous
    sd = math.sqrt(t_now - t_prev)
    mean = z_prev * math.sqrt(t_prev) + drift * (t_now - t_prev)
    kernel = _norm_pdf((z[:, None] * math.sqrt(t_now) - mean[None, :]) / sd)
    return z, w, kernel @ g_prev * math.sqrt(t_now) / sd


def spending_boundaries(
    information_fractions: Sequence[float],
    alpha: float = 0.05,
    spending: str = "obrien_fleming",
    sides: int = 2,
    *,
    grid_points: int = 801,
    spending_options: Mapping[str, Any] | None = None,
    cache: bool = True,
) -> SpendingBoundaries:
    """Lan-DeMets error-spending boundaries for group-sequential looks at a planned maximum.

    A gate that will stop after at most ``N`` runs and looks after runs ``n_1 < ... < n_K``
    passes ``information_fractions = n_k / N``; the boundaries keep the type I error at
    ``alpha`` over the ``K`` looks while keeping nearly the power of a single test at ``N``
    (O'Brien-Fleming spending) or spending evenly (Pocock).

    Parameters
    ----------
    information_fractions : sequence of float
        Strictly increasing, in (0, 1].  The error spent by the last look is the spending
        function at its fraction (``alpha`` when it is 1).
    alpha : float
        Total type I error (two-sided total when ``sides == 2``).
    spending : str
        A spending function in :data:`SPENDING` ("obrien_fleming", "pocock", "hsd"),
        applied per side at ``alpha_s = alpha / sides``: Lan & DeMets' (1983)
        O'Brien-Fleming type ``2 - 2 Phi(z_{1 - alpha_s / 2} / sqrt(t))``, their Pocock
        type ``alpha_s log(1 + (e - 1) t)``, or Hwang, Shih & DeCani's (1990) family.
        Two-sided boundaries are symmetric, each side spending ``alpha / 2`` (the
        convention of Reboussin et al.'s ld98 and of gsDesign ``test.type=2``).
    sides : {1, 2}
        One-sided (upper) or symmetric two-sided boundaries.
    grid_points : int
        Simpson points per look (odd, >= 101).
    spending_options : mapping, optional
        Options of the spending function (``{"gamma": -2.0}`` for ``hsd``; validated by
        its options dataclass).
    cache : bool
        Look the solution up (and keep it) in the module's cache (see the module notes);
        False always computes.

    Returns
    -------
    SpendingBoundaries

    Notes
    -----
    The joint law of the z-statistics at the looks is that of Brownian motion: ``Z_k =
    S_k / sqrt(t_k)`` with independent increments, ``corr(Z_i, Z_j) = sqrt(t_i / t_j)``.
    The first boundary is a normal quantile; each later one solves (scipy ``brentq``)
    ``P(no crossing before look k, crossing at k) = spent(t_k) - spent(t_{k-1})``, the
    probability being integrated over the sub-density of ``Z_{k-1}`` on the continuation
    region, which is propagated look to look by convolution with the normal increment
    (Armitage, McPherson & Rowe, 1969; Jennison & Turnbull, 2000, ch. 19) on a Simpson
    grid.  Hand-written because scipy has no group-sequential routine, and its
    ``multivariate_normal.cdf`` is a randomised quasi-Monte Carlo integral (error about
    1e-5) that cannot resolve the first O'Brien-Fleming increments (about 1e-6).

    Validated (``tests/reference/test_sequential_reference.py``) against published
    boundaries: K = 5 equal looks, two-sided 0.05, O'Brien-Fleming type 4.877, 3.357,
    2.680, 2.290, 2.031 and Pocock type 2.438, 2.427, 2.410, 2.397, 2.386; reference values
    of the DesignComplexSurvival and SeqBounds.jl packages; scipy's multivariate normal CDF;
    and simulation of the crossing probability.

    Examples
    --------
    >>> b = spending_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], alpha=0.05)
    >>> [round(c, 3) for c in b.z_boundaries]
    [4.877, 3.357, 2.68, 2.29, 2.031]
    >>> b.to_frame().columns[:3]
    ['look', 'information_fraction', 'z_boundary']
    """
    t = _check_fractions(information_fractions)
    a = check_probability("alpha", alpha)
    if not isinstance(spending, str):
        raise ParameterError(f"spending must be a spending function name; got {spending!r}")
    entry = SPENDING.entry(spending)
    options = dict(spending_options or {})
    spent = entry.make(**options)
    if isinstance(sides, bool) or sides not in (1, 2):
        raise ParameterError(f"sides must be 1 or 2; got {sides!r}")
    points = cast(int, check_int("grid_points", grid_points, minimum=101))
    points += 1 - points % 2  # Simpson needs an odd count
    inputs = _inputs(t, a, spending, int(sides), points, options)
    if cache:
        z = _cached(inputs)
        if z is not None:
            return _result(t, z, spent, a, spending, int(sides), points, options)
    c = _solve(t, a, spent, int(sides), points)
    if cache:
        _keep(inputs, c)
    return _result(t, c, spent, a, spending, int(sides), points, options)


def _result(
    t: np.ndarray,
    c: np.ndarray,
    spent: Any,
    a: float,
    spending: str,
    sides: int,
    points: int,
    options: dict[str, Any],
) -> SpendingBoundaries:
    cum = sides * np.asarray(spent(t, a / sides), dtype=float)
    return SpendingBoundaries(
        information_fractions=tuple(float(v) for v in t),
        z_boundaries=tuple(float(v) for v in c),
        cumulative_alpha=tuple(float(v) for v in cum),
        alpha=a,
        spending=spending,
        sides=int(sides),
        grid_points=points,
        spending_options=options,
    )


def _solve(t: np.ndarray, a: float, spent: Any, sides: int, points: int) -> np.ndarray:
    """Solve for the boundaries: recursive integration and a root search (the slow part)."""
    cum = sides * np.asarray(spent(t, a / sides), dtype=float)
    inc = np.diff(np.concatenate([[0.0], cum]))
    from scipy.optimize import brentq  # solving for boundaries: not on the gates' start path

    c = np.empty(len(t))
    c[0] = _norm_isf(inc[0] / sides) if inc[0] > 0 else np.inf
    z, w, f = _continuation(t[0], c[0], sides, 0.0, points, None)
    for k in range(1, len(t)):  # a loop over looks, not runs
        g = w * f
        target = float(inc[k])
        if target <= 0.0:
            c[k] = np.inf
        else:

            def excess(
                cc: float, z: np.ndarray = z, g: np.ndarray = g, k: int = k, target: float = target
            ) -> float:
                return _exit_probability(z, g, t[k - 1], t[k], cc, sides, 0.0) - target

            c[k] = brentq(excess, 0.0, 40.0, xtol=1e-12, rtol=1e-14)
        z, w, f = _continuation(t[k], c[k], sides, 0.0, points, (z, g, t[k - 1]))
    return c


# ---------------------------------------------------------------------- the cache
#: The solutions shipped with cogstats (built-in gates' defaults).
TABLE = Path(__file__).with_name("spending_table.json")
#: Part of every cache key: bump it when :func:`_solve` changes, and rebuild the table.
SOLVER_VERSION = 1
_MEMO: dict[str, tuple[dict[str, Any], tuple[float, ...]]] = {}
_TABLE: dict[str, Any] | None = None


def _inputs(
    t: np.ndarray, a: float, spending: str, sides: int, points: int, options: Mapping[str, Any]
) -> dict[str, Any]:
    """Every input of a solution, floats as exact hex strings (the cache key's content)."""

    def exact(v: Any) -> Any:
        return float(v).hex() if isinstance(v, float) else v

    return {
        "solver": SOLVER_VERSION,
        "fractions": [float(v).hex() for v in t],
        "alpha": float(a).hex(),
        "spending": spending,
        "sides": sides,
        "grid_points": points,
        "options": {k: exact(v) for k, v in sorted(options.items())},
    }


def _key(inputs: Mapping[str, Any]) -> str:
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_dir() -> Path:
    """Return the per-user folder of the boundary cache (see the module notes).

    Examples
    --------
    >>> cache_dir().name
    'spending'
    """
    root = os.environ.get("COGSTATS_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = str(Path(xdg) / "cogstats") if xdg else str(Path.home() / ".cache" / "cogstats")
    return Path(root) / "spending"


def _valid(entry: Any, inputs: Mapping[str, Any]) -> np.ndarray | None:
    """Return a stored entry's boundaries when it is this call's and well formed."""
    if not isinstance(entry, Mapping) or entry.get("inputs") != inputs:
        return None
    z = entry.get("z")
    n = len(inputs["fractions"])
    if not isinstance(z, list) or len(z) != n or not all(isinstance(v, str) for v in z):
        return None
    try:
        c = np.array([float.fromhex(v) for v in z], dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    if np.isnan(c).any() or (c < 0).any():
        return None
    return c


def _cached(inputs: dict[str, Any]) -> np.ndarray | None:
    global _TABLE
    key = _key(inputs)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] == inputs:
        return np.asarray(hit[1], dtype=np.float64)
    if _TABLE is None:
        try:
            loaded = json.loads(TABLE.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = {}
        _TABLE = loaded if isinstance(loaded, dict) else {}
    c = _valid(_TABLE.get(key), inputs)
    if c is None:
        try:
            data = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            data = None
        c = _valid(data, inputs)
    if c is not None:
        _MEMO[key] = (inputs, tuple(float(v) for v in c))
    return c


def _keep(inputs: dict[str, Any], c: np.ndarray) -> None:
    key = _key(inputs)
    _MEMO[key] = (inputs, tuple(float(v) for v in c))
    entry = {"inputs": inputs, "z": [float(v).hex() for v in c]}
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh)
            os.replace(tmp, folder / f"{key}.json")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:  # a read-only home: the memory cache still holds it
        pass


def memo_entries() -> dict[str, dict[str, Any]]:
    """Return this process's solutions as table entries (for building ``spending_table.json``).

    Examples
    --------
    >>> _ = spending_boundaries([0.5, 1.0], alpha=0.05, cache=True)
    >>> all(set(e) == {"inputs", "z"} for e in memo_entries().values())
    True
    """
    return {
        key: {"inputs": inputs, "z": [float(v).hex() for v in z]}
        for key, (inputs, z) in _MEMO.items()
    }


def _check_fractions(values: Any) -> np.ndarray:
    try:
        t = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"information_fractions must be a sequence of numbers; got {values!r}"
        ) from None
    if t.ndim != 1 or t.size == 0:
        raise ParameterError(
            f"information_fractions must be a non-empty 1-d sequence; got shape {t.shape}"
        )
    if not np.isfinite(t).all() or (t <= 0).any() or (t > 1).any():
        raise ParameterError(f"information_fractions must lie in (0, 1]; got {t.tolist()}")
    if (np.diff(t) <= 0).any():
        raise ParameterError(f"information_fractions must be strictly increasing; got {t.tolist()}")
    return t


_LOOK_LEVELS: dict[tuple[Any, ...], np.ndarray] = {}


def planned_look_levels(
    alpha: float, looks: int, spending: str, spending_options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """Return the one-sided level spent at each of ``looks`` evenly spaced planned looks.

    Index ``k`` (1 .. ``looks``) is the nominal level of look ``k`` of a one-sided design
    spending ``alpha`` with ``spending``; index 0 (before the first look) is 0.  The
    levels are computed once per design and cached (the gates ask for them at every
    evaluation); the array returned is a copy.

    Examples
    --------
    >>> lv = planned_look_levels(0.004, 20, "hsd")
    >>> lv.shape, float(lv[0]), bool(0 < lv[1] < lv[20] < 0.004)
    ((21,), 0.0, True)
    >>> float(planned_look_levels(0.01, 1, "hsd")[1])
    0.01
    """
    opts = dict(spending_options or {})
    key = (float(alpha), int(looks), spending, tuple(sorted(opts.items())))
    cached = _LOOK_LEVELS.get(key)
    if cached is None:
        k = int(looks)
        cached = np.zeros(k + 1)
        if k == 1:
            cached[1] = alpha
        else:
            b = spending_boundaries(
                [i / k for i in range(1, k + 1)], alpha, spending, sides=1, spending_options=opts
            )
            cached[1:] = special.ndtr(-np.asarray(b.z_boundaries, dtype=float))
        _LOOK_LEVELS[key] = cached
    return cached.copy()
