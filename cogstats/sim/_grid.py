"""A spec's grid: how many cells it has, and every cell validated, in time that scales.

Cells are the Cartesian product of the grid's axes (axes zipped together vary together),
in a fixed order: the zipped groups first, then the other axes in the file's order, the
last axis varying fastest.  Cell ``i`` in that order is seeded with child ``i`` of the
spec's seed, so the order never changes.

**Counting first.**  :func:`count_cells` multiplies the axes' lengths; a grid whose cells
cannot be held in memory (:data:`CELL_BYTES` each) is refused before one is built, naming
the key ``grid`` and the estimate.

**Validating by section.**  Validating each cell on its own (``Scenario.with_values``)
costs milliseconds a cell: 10,000 cells took a minute.  A scenario's sections are
validated independently of each other (``gate``, ``retrieval``, ``lessons`` with
``difficulty``, ``score``, the name and description), so the axes are grouped by the
section they set, each group's own combinations are validated once, and a cell is its
validated sections put together (``dataclasses.replace``): 10,000 cells over a gate's three
options and a lesson's effect are 1,010 validations.  Sections that depend on each other
are one group: ``lessons`` and ``difficulty`` (a lesson's family), ``retrieval``, ``gate``
and ``policy`` under a preset; an axis on ``runs`` (which every section is checked
against) or a zipped group across sections joins everything it touches, and a grid of one
group is validated cell by cell, as before.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cogstats.sim._sizes import check_fits

if TYPE_CHECKING:
    from cogstats.sim.spec import Scenario

__all__ = ["CELL_BYTES", "build_cells", "check_grid", "count_cells"]

#: bytes a built cell holds at least, the estimate a grid's refusal is based on (measured
#: at 10,000 cells: 0.55 KB for its values and scenario, 0.55 KB for its task)
CELL_BYTES = 1024
#: the scenario's fields each section of a spec sets
_FIELDS = {
    "lessons": ("listed", "streams", "poison"),
    "difficulty": ("difficulty",),
    "score": ("score",),
    "retrieval": ("retrieval",),
    "gate": ("gate",),
    "policy": ("preset", "retrieval", "gate"),
    "name": ("name",),
    "description": ("description",),
    "record_empty_runs": ("record_empty_runs",),
}
#: sections validated together (one refers to the other)
_COUPLED = (("lessons", "difficulty"), ("policy", "retrieval", "gate"))
_SECTION = re.compile(r"[^.\[]+")


def _units(grid: Mapping[str, Sequence[Any]], zipped: Sequence[Sequence[str]]) -> list[Any]:
    """Return the axes of the product in cell order, each a list of ``{path: value}``."""
    inside = {p for group in zipped for p in group}
    units: list[list[dict[str, Any]]] = []
    for group in zipped:
        units.append([{p: grid[p][i] for p in group} for i in range(len(grid[group[0]]))])
    for path, values in grid.items():
        if path not in inside:
            units.append([{path: v} for v in values])
    return units


def count_cells(grid: Mapping[str, Sequence[Any]], zipped: Sequence[Sequence[str]]) -> int:
    """Return the number of cells, without building one.

    Examples
    --------
    >>> count_cells({"a": [1, 2, 3], "b": [1, 2], "c": [5, 6]}, [["b", "c"]])
    6
    >>> count_cells({}, [])
    1
    """
    return math.prod(len(unit) for unit in _units(grid, zipped))


def check_grid(
    grid: Mapping[str, Sequence[Any]], zipped: Sequence[Sequence[str]], source: str | None
) -> int:
    """Return the number of cells; refuse a grid whose cells cannot be held in memory."""
    n = count_cells(grid, zipped)
    lengths = " x ".join(str(len(v)) for v in grid.values())
    check_fits(
        n * CELL_BYTES,
        key="grid",
        what=f"the grid's {n:,} cells (axes of {lengths} values)",
        source=source,
        hint="use fewer values per axis, fewer axes, or zip axes that vary together",
    )
    return n


def _section(path: str) -> str:
    m = _SECTION.match(path)
    return m.group() if m else path


def _blocks(units: list[list[dict[str, Any]]], preset: bool) -> list[list[int]] | None:
    """Group the units (by position) into independently validated blocks; None: one block."""
    parent: dict[str, str] = {}
    policy = preset or any(_section(p) == "policy" for unit in units for p in unit[0])

    def find(s: str) -> str:
        while parent.setdefault(s, s) != s:
            s = parent[s]
        return s

    def join(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for group in _COUPLED:
        if policy or group[0] != "policy":  # (without a preset, gate and retrieval part)
            for s in group[1:]:
                join(group[0], s)
    owner: list[str] = []
    for unit in units:
        sections = [_section(p) for p in unit[0]]
        if any(s not in _FIELDS for s in sections):  # runs, or a key the spec refuses
            return None
        for s in sections[1:]:
            join(sections[0], s)
        owner.append(sections[0])
    blocks: dict[str, list[int]] = {}
    for k, s in enumerate(owner):
        blocks.setdefault(find(s), []).append(k)
    return list(blocks.values()) if len(blocks) > 1 else None


def build_cells(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    zipped: Sequence[Sequence[str]],
    source: str | None,
) -> list[tuple[dict[str, Any], Scenario]]:
    """Return every cell's grid values and its validated scenario, in cell order.

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0}]}})
    >>> cells = build_cells(s, {"gate.min_trials": [2, 3], "lessons.listed[0].effect": [0.1, 0.2]},
    ...                     [], None)
    >>> [(v["gate.min_trials"], c.gate.policy["min_trials"], c.listed[0].effect) for v, c in cells]
    [(2, 2, 0.1), (2, 2, 0.2), (3, 3, 0.1), (3, 3, 0.2)]
    """
    units = _units(grid, zipped)
    blocks = _blocks(units, scenario.preset is not None)
    out: list[tuple[dict[str, Any], Scenario]] = []
    if blocks is None:  # one group: every cell validated on its own
        for combo in itertools.product(*units):
            cell = _merge(combo)
            out.append((cell, scenario.with_values(cell, source=source)))
        return out
    # each block's own combinations, validated once: the fields its sections set
    fields: list[list[dict[str, Any]]] = []
    for block in blocks:
        names = {f for k in block for p in units[k][0] for f in _FIELDS[_section(p)]}
        mine = []
        for combo in itertools.product(*(units[k] for k in block)):
            built = scenario.with_values(_merge(combo), source=source)
            mine.append({f: getattr(built, f) for f in names})
        fields.append(mine)
    # a cell: the unit choices in cell order; a block's choices index its fields above
    # (itertools.product's order: the block's last unit varies fastest)
    sizes = [[len(units[k]) for k in block] for block in blocks]
    for choice in itertools.product(*(range(len(u)) for u in units)):
        cell = _merge(units[k][i] for k, i in enumerate(choice))
        changes: dict[str, Any] = {}
        for b, block in enumerate(blocks):
            index = 0
            for j, k in enumerate(block):
                index = index * sizes[b][j] + choice[k]
            changes.update(fields[b][index])
        out.append((cell, dataclasses.replace(scenario, **changes)))
    return out


def _merge(parts: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {}
    for part in parts:
        cell.update(part)
    return cell
