"""How much memory a simulation needs, and the refusal of what cannot fit.

A spec is checked against the machine before anything is allocated: a replicate's
arrays (:func:`replicate_bytes`) and a grid's cells (``cogstats.sim._grid``) are
estimated from the spec's numbers alone, and a size beyond the machine's memory is a
:class:`~cogstats._validation.SpecError` naming the key and the estimate, never a numpy
``MemoryError`` for "69.8 TiB" or a loop that does not end.
"""

from __future__ import annotations

import os
from pathlib import Path

from cogstats._validation import SpecError

__all__ = ["check_fits", "format_bytes", "machine_memory", "replicate_bytes"]


def machine_memory() -> int:
    """Return the memory this process may use: physical memory, or a smaller cgroup limit.

    Examples
    --------
    >>> machine_memory() > 0
    True
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        total = 1 << 50
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def format_bytes(n: float) -> str:
    """Return a byte count in binary units.

    Examples
    --------
    >>> format_bytes(76_742_000_000_000), format_bytes(512)
    ('69.8 TiB', '512 B')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def replicate_bytes(runs: int, n_lessons: int, max_facts: int, pool: int) -> int:
    """Return the bytes one simulated replicate's arrays take.

    Its block of uniforms (``runs * (pool + 6) + n_lessons`` doubles, and their
    transforms), the per-run outcome arrays (``max_facts`` injected lessons, ``pool +
    max_facts`` retrieval slots twice, eight scalars) and eight arrays per lesson.
    ``pool`` is the uniforms per run retrieval draws besides its two coins (0 gives a
    lower bound before the policy is known).

    Examples
    --------
    >>> format_bytes(replicate_bytes(10**11, 1, 12, 0))
    '40.7 TiB'
    """
    size = runs * (pool + 6) + n_lessons
    width = pool + max_facts
    return 8 * (2 * size + runs * (max_facts + 2 * width + 8) + 8 * n_lessons)


def check_fits(needed: int, *, key: str, what: str, source: str | None, hint: str) -> None:
    """Raise :class:`SpecError` naming ``key`` when ``needed`` bytes exceed the memory.

    Examples
    --------
    >>> check_fits(1024, key="runs", what="one replicate", source=None, hint="")
    >>> try:
    ...     check_fits(2**60, key="runs", what="one replicate", source="s.toml",
    ...                hint="lower runs")
    ... except SpecError as exc:
    ...     print(str(exc).split(";")[0])
    s.toml, key 'runs': one replicate needs about 1024.0 PiB of memory
    """
    memory = machine_memory()
    if needed > memory:
        raise SpecError(
            f"{what} needs about {format_bytes(needed)} of memory; this machine has "
            f"{format_bytes(memory)}: {hint}",
            key=key,
            source=source,
        )
