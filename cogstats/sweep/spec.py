"""Sweep specs: a base scenario, a grid of values over it, replicates and a root seed.

A sweep spec is a simulation spec (see :mod:`cogstats.sim.spec`) that may take its base
scenario from another file::

    name = "threshold-sweep"
    scenario = "poison_crater.toml"   # base scenario, relative to this file
    replicates = 400
    seed = 20261201

    [gate]                            # overrides the base key by key
    max_trials = 8

    [grid]                            # "dotted.path" = [values]
    "gate.min_trials" = [2, 3, 4]
    "gate.promote_margin" = [0.03, 0.05]
    "gate.evict_margin" = [0.03, 0.05]
    zip = [["gate.promote_margin", "gate.evict_margin"]]

``scenario`` is either a path (relative to the sweep file; the base file's own ``[grid]``
is ignored, its ``replicates`` and ``seed`` are inherited unless the sweep file sets
them) or an inline ``[scenario]`` table; without it the sweep file is itself the
scenario.  Tables of the sweep file override the base's key by key (nested tables merge,
any other value, arrays of tables included, replaces the base's).  The merged mapping is
validated by :func:`cogstats.sim.spec_from_dict`, which also validates every cell of the
grid, so a malformed spec (an unknown parameter, an empty axis, a value of the wrong
type) fails here, before any cell runs, with an error naming the key and the file.

Cell ``i`` (in :meth:`SimulationSpec.cells` order) is seeded with child ``i`` of
``numpy.random.SeedSequence(seed)`` -- exactly as ``cogstats simulate`` seeds it -- so a
sweep cell and the same cell simulated alone give the same numbers.

Sizes are checked before anything is built: a grid whose cells cannot be held in memory
(about 1 KB a cell: ``10**10`` cells need 9 TiB) raises :class:`SpecError` naming
``grid``, the number of cells and the estimate, and a scenario one replicate of which
cannot fit (``runs = 10**11``) one naming ``runs``.  Each section's combinations of grid
values are validated once and the cells put together from them (``cogstats.sim._grid``),
so 10,000 cells over a gate's three options and a lesson's effect load in under a second.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cogstats._toml import read_toml
from cogstats._validation import SpecError, check_int
from cogstats.sim.engine import seed_record
from cogstats.sim.spec import Scenario, SimulationSpec, spec_from_dict

__all__ = [
    "CellTask",
    "SweepSpec",
    "canonical_json",
    "cell_key",
    "check_overrides",
    "load_sweep",
    "spec_from_resolved",
    "sweep_from_dict",
]

#: keys of a sweep file that are not part of the scenario
RUN_KEYS = ("replicates", "seed", "grid")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same mapping always gives the same text.

    Examples
    --------
    >>> canonical_json({"b": [1, 2.5], "a": "x"})
    '{"a":"x","b":[1,2.5]}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def cell_key(values: Mapping[str, Any]) -> str:
    """Return a stable 16-hex-digit key of a cell's grid values (SHA-256 of canonical JSON).

    Examples
    --------
    >>> cell_key({"gate.min_trials": 2}) == cell_key({"gate.min_trials": 2})
    True
    >>> cell_key({"gate.min_trials": 2}) == cell_key({"gate.min_trials": 3})
    False
    """
    return hashlib.sha256(canonical_json(dict(values)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CellTask:
    """Everything a worker needs to run one cell: picklable, self-contained.

    Attributes
    ----------
    index : int
        Position of the cell in the spec's cell order.
    key : str
        :func:`cell_key` of its grid values.
    values : dict
        Its grid values (dotted path -> value).
    scenario : Scenario
        The validated scenario of the cell.
    seed : dict
        The cell's SeedSequence as ``{"entropy": ..., "spawn_key": [...]}``
        (``numpy.random.SeedSequence(**seed)`` re-creates it).
    replicates : int
        Replicates to simulate.
    """

    index: int
    key: str
    values: Mapping[str, Any]
    scenario: Scenario
    seed: Mapping[str, Any]
    replicates: int

    def seed_sequence(self) -> np.random.SeedSequence:
        """Return the cell's SeedSequence."""
        return np.random.SeedSequence(
            entropy=self.seed["entropy"], spawn_key=tuple(self.seed["spawn_key"])
        )


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the simulation spec plus where it came from.

    Build with :func:`load_sweep` (a TOML file) or :func:`sweep_from_dict`.

    Attributes
    ----------
    simulation : SimulationSpec
        Base scenario (merged), grid, zipped axes, replicates and root seed.
    name : str
        The scenario's name.
    source : str or None
        The sweep file.
    base : str or None
        The base scenario file, when ``scenario = "path"`` was used.
    stem : str
        Name of the default output folder, ``sweeps/<stem>`` (the file's stem).

    Examples
    --------
    >>> spec = sweep_from_dict({
    ...     "runs": 10, "replicates": 4, "seed": 7,
    ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
    ...     "grid": {"lessons.listed[0].effect": [0.0, 0.1, 0.2]},
    ... })
    >>> len(spec.cells()), spec.cells()[1].values, spec.cells()[1].replicates
    (3, {'lessons.listed[0].effect': 0.1}, 4)
    """

    simulation: SimulationSpec
    name: str
    source: str | None = None
    base: str | None = None
    stem: str = "sweep"
    _cells: tuple[tuple[dict[str, Any], Scenario], ...] = field(default=(), repr=False)

    @property
    def replicates(self) -> int:
        """Replicates per cell given in the spec."""
        return self.simulation.replicates

    @property
    def seed(self) -> int:
        """Root seed given in the spec."""
        return self.simulation.seed

    @property
    def axes(self) -> tuple[str, ...]:
        """The grid's dotted paths, in the order of the file."""
        return tuple(self.simulation.grid)

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return len(self._cells)

    def default_out(self) -> Path:
        """``sweeps/<stem>`` (relative to the working directory)."""
        return Path("sweeps") / self.stem

    def cells(self, *, replicates: int | None = None, seed: int | None = None) -> list[CellTask]:
        """Every cell as a :class:`CellTask`, in a stable order.

        ``replicates`` and ``seed`` override the spec's.  Cell ``i`` is seeded with
        ``numpy.random.SeedSequence(seed).spawn(n_cells)[i]``, as ``cogstats simulate``
        does.
        """
        reps, root = check_overrides(self, replicates, seed)
        children = np.random.SeedSequence(root).spawn(len(self._cells))
        return [
            CellTask(
                index=i,
                key=cell_key(values),
                values=values,
                scenario=scenario,
                seed=seed_record(child),
                replicates=reps,
            )
            for i, ((values, scenario), child) in enumerate(zip(self._cells, children, strict=True))
        ]

    def resolved(self) -> dict[str, Any]:
        """Return the resolved spec as plain data: full base scenario, grid and zipped axes.

        Its canonical JSON is what a sweep store pins in its manifest; it rebuilds the
        spec with :func:`sweep_from_dict` (with ``replicates`` and ``seed`` added).
        """
        sim = self.simulation
        return {
            "scenario": sim.scenario.to_dict(full=True),
            # [path, values] pairs: the axis order fixes the cell order, and canonical
            # JSON sorts the keys of a mapping
            "grid": [[path, list(values)] for path, values in sim.grid.items()],
            "zip": [list(group) for group in sim.zip],
        }

    def column_types(self) -> dict[str, str]:
        """Return the stored type of each grid axis: "bool", "int", "float", "str" or "json".

        An axis mixing integers and floats is stored as floats; an axis of arrays or
        tables (or of mixed kinds) is stored as canonical JSON text.
        """
        out: dict[str, str] = {}
        for path, values in self.simulation.grid.items():
            if all(isinstance(v, bool) for v in values):
                out[path] = "bool"
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                out[path] = "int"
            elif all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                for v in values
            ):
                out[path] = "float"
            elif all(isinstance(v, str) for v in values):
                out[path] = "str"
            else:
                out[path] = "json"
        return out


def load_sweep(
    path: str | Path, *, preset: str | None = None, allow_import: Sequence[str] | None = None
) -> SweepSpec:
    r"""Read and validate a sweep spec (TOML); every cell is validated before anything runs.

    Parameters
    ----------
    path : str or Path
        The sweep file.  A top-level ``scenario = "base.toml"`` is read relative to it.
    preset : str, optional
        A preset (``--policy recommended``) replacing the scenario's retrieval and gate;
        grid axes on its own options tune it, axes on replaced settings are an error.
    allow_import : sequence of str, optional
        Modules a ``"module:Class"`` name in the file may import (none by default: a
        name from a file imports nothing; see :mod:`cogstats._imports`).

    Returns
    -------
    SweepSpec

    Raises
    ------
    SpecError
        Naming the key and the file: malformed TOML, an unknown grid parameter, an empty
        axis, a value whose type differs from the scenario's, an invalid cell.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "base.toml").write_text(
    ...     'runs = 12\n[[lessons.listed]]\nid = "a"\neffect = 0.1\n'
    ...     '[gate]\ntype = "cycgraph"\nmin_trials = 2\n')
    >>> _ = (d / "s.toml").write_text(
    ...     'scenario = "base.toml"\nreplicates = 5\n[grid]\n"gate.min_trials" = [2, 3]\n')
    >>> spec = load_sweep(d / "s.toml")
    >>> spec.n_cells, spec.replicates, spec.stem
    (2, 5, 's')
    >>> bad = 'scenario = "base.toml"\n[grid]\n"gate.min_trails" = [2]\n'
    >>> _ = (d / "bad.toml").write_text(bad)
    >>> load_sweep(d / "bad.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: ...bad.toml..., key 'grid.gate.min_trails': names no...
    """
    from cogstats._imports import allow_imports

    path = Path(path)
    data = read_toml(path)
    with allow_imports(allow_import):
        return sweep_from_dict(
            data, source=str(path), base_dir=path.parent, stem=path.stem, preset=preset
        )


def sweep_from_dict(
    data: Mapping[str, Any],
    *,
    source: str | None = None,
    base_dir: str | Path | None = None,
    stem: str | None = None,
    preset: str | None = None,
) -> SweepSpec:
    """Build a :class:`SweepSpec` from a mapping (as read from TOML; see :func:`load_sweep`).

    Parameters
    ----------
    data : mapping
        The sweep: scenario keys and tables, ``replicates``, ``seed``, ``[grid]`` and
        optionally ``scenario`` (a path or an inline table) naming the base scenario.
    source : str, optional
        File name used in error messages.
    base_dir : str or Path, optional
        Folder that a relative ``scenario`` path is read from (default: the working
        directory).
    stem : str, optional
        Name of the default output folder (default: the scenario's name).
    preset : str, optional
        See :func:`load_sweep`.

    Examples
    --------
    >>> spec = sweep_from_dict({
    ...     "scenario": {"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}},
    ...     "runs": 15, "grid": {"gate.min_trials": [2, 4]},
    ... })
    >>> spec.simulation.scenario.runs, spec.axes
    (15, ('gate.min_trials',))
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"a sweep spec must be a table; got {data!r}", source=source)
    merged, base = _resolve(dict(data), source, Path(base_dir) if base_dir else None, ())
    label = source if base is None else f"{source or '<sweep>'} (base scenario {base})"
    simulation = spec_from_dict(merged, source=label, preset=preset)
    cells = tuple(simulation.cells())
    name = simulation.scenario.name
    return SweepSpec(
        simulation=simulation,
        name=name,
        source=source,
        base=base,
        stem=(stem or name) if preset is None else f"{stem or name}-{preset}",
        _cells=cells,
    )


def spec_from_resolved(
    resolved: Mapping[str, Any], *, replicates: int, seed: int, source: str | None = None
) -> SweepSpec:
    """Rebuild a :class:`SweepSpec` from :meth:`SweepSpec.resolved` (as kept in a manifest)."""
    data = dict(resolved["scenario"])
    grid: dict[str, Any] = {path: list(values) for path, values in resolved.get("grid", [])}
    if resolved.get("zip"):
        grid["zip"] = [list(g) for g in resolved["zip"]]
    data = {k: v for k, v in data.items() if v is not None}
    data.update({"replicates": replicates, "seed": seed, "grid": grid})
    return sweep_from_dict(data, source=source)


# ---------------------------------------------------------------------- helpers
def _resolve(
    data: dict[str, Any], source: str | None, base_dir: Path | None, seen: tuple[Path, ...]
) -> tuple[dict[str, Any], str | None]:
    """Merge ``data`` over its base scenario (recursively); return it and the base's name."""
    if "scenario" not in data:
        return data, None
    ref = data.pop("scenario")
    if isinstance(ref, Mapping):
        inline = dict(ref)
        if "scenario" in inline:
            raise SpecError(
                "an inline scenario cannot name another base",
                key="scenario.scenario",
                source=source,
            )
        for k in RUN_KEYS:
            if k in inline:
                raise SpecError(
                    "belongs at the top level of the sweep file, not in [scenario]",
                    key=f"scenario.{k}",
                    source=source,
                )
        return _merge(inline, data), None
    if not isinstance(ref, str) or not ref:
        raise SpecError(
            f"must be a path to a scenario file or an inline table; got {ref!r}",
            key="scenario",
            source=source,
        )
    path = (base_dir or Path.cwd()) / ref
    resolved = path.resolve()
    if resolved in seen:
        raise SpecError(
            f"base scenarios form a cycle through {path}", key="scenario", source=source
        )
    if not path.exists():
        raise SpecError(f"base scenario file not found: {path}", key="scenario", source=source)
    base_data = read_toml(path)
    base_data.pop("grid", None)  # the sweep's grid defines the cells
    base_data, _ = _resolve(base_data, str(path), path.parent, (*seen, resolved))
    # validate the base on its own first, so that its errors name its own file
    spec_from_dict(base_data, source=str(path))
    return _merge(base_data, data), str(path)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: nested tables merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and key != "grid":
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def check_overrides(spec: SweepSpec, replicates: int | None, seed: int | None) -> tuple[int, int]:
    """Return the effective (replicates, seed): the overrides validated, else the spec's."""
    reps = spec.replicates if replicates is None else replicates
    root = spec.seed if seed is None else seed
    reps = int(check_int("replicates", reps, minimum=1) or 1)
    root = int(check_int("seed", root, minimum=0) or 0)
    return reps, root
