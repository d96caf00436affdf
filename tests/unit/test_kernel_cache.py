"""The compiled kernel's disk cache follows its inlined pieces (cogstats.sim._kernel).

The run loop and every piece's cached functions go when a piece or a rule module they
inline changes (a stale ``_kernel_lifecycle.judge`` once ran an old rule); other cached
functions (``_tdist``, which inlines nothing of a gate) stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cogstats.sim._kernel as K


def test_a_changed_piece_drops_the_cached_loop(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a copy of the kernel's folder layout: sim/_kernel*.py, sim/_tdist.py, numerics.py
    sim = tmp_path / "cogstats" / "sim"
    (sim / "__pycache__").mkdir(parents=True)
    src = Path(K.__file__).resolve().parent
    for f in [*src.glob("_kernel*.py"), src / "_tdist.py"]:
        shutil.copy(f, sim / f.name)
    shutil.copy(src.parent / "numerics.py", tmp_path / "cogstats" / "numerics.py")
    monkeypatch.setattr(K, "__file__", str(sim / "_kernel.py"))
    cached = sim / "__pycache__" / "_kernel.run_chunk-160.py311.nbi"
    piece_cache = sim / "__pycache__" / "_kernel_lifecycle.judge-216.py311.1.nbc"
    other = sim / "__pycache__" / "_tdist.t_cdf-100.py311.1.nbc"
    for f in (cached, piece_cache, other):
        f.write_text("x")
    K._drop_stale_cache()  # no stamp yet: the cached kernel may be stale, so it goes
    assert not cached.exists() and not piece_cache.exists() and other.exists()
    cached.write_text("x")
    piece_cache.write_text("x")
    K._drop_stale_cache()  # the same sources: the cache stays
    assert cached.exists() and piece_cache.exists()
    piece = sim / "_kernel_cycgraph.py"
    piece.write_text(piece.read_text() + "\n# edited\n")
    K._drop_stale_cache()  # a piece changed: the loop and the pieces are compiled again
    assert not cached.exists() and not piece_cache.exists() and other.exists()
