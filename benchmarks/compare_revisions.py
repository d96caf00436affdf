"""Before and after a change: run benchmarks on two revisions, interleaved, as ratios.

``python -m benchmarks.compare_revisions --before REV [--after WORKTREE] [--only p1,p3]
[--repeat 5] [--quick]`` checks ``REV`` out into a temporary git worktree, then runs
``python -m benchmarks.run --only NAME`` in the old tree and in this one by turns
(before, after, before, after, ...: drifts of a shared machine fall on both sides),
``--repeat`` times each, with this virtual environment.  For every figure in seconds that
both sides report (keys ending ``_s`` or ``_seconds``, nested ones by dotted path) it prints
the median before and after, their ratio, and the noise: twice the run-to-run standard
deviation of the side with the larger one (issue 17's definition).  A change is slower
than noise when ``after - before > noise``.  The figures go to
``benchmarks/results/compare_revisions.json``.

``--bench-from-after`` copies this tree's ``benchmarks/`` into the old one first, so that a
benchmark written with the change (``s2_runtime``) times the old library too.

It measures whole benchmark runs, so a benchmark's own reference side (cycgraph, scipy)
runs too: its ratios within one run stay in that benchmark's own result.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _seconds(d: Any, prefix: str = "") -> dict[str, float]:
    """Every numeric figure in seconds of a benchmark's JSON, by dotted path."""
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}{k}"
            if isinstance(v, dict):
                out.update(_seconds(v, key + "."))
            elif (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and (k.endswith("_s") or k.endswith("_seconds"))
            ):
                out[key] = float(v)
    return out


# The virtual environment's editable install maps ``cogstats`` onto this checkout through an
# import hook that outranks PYTHONPATH for submodules; drop it, so each tree runs its own code.
_OWN_TREE = (
    "import runpy, sys\n"
    "sys.meta_path[:] = [m for m in sys.meta_path if 'editable' not in repr(m).lower()]\n"
    "sys.path_hooks[:] = [h for h in sys.path_hooks if 'editable' not in repr(h).lower()]\n"
    "sys.path_importer_cache.clear()\n"
    "sys.argv = ['benchmarks.run', *sys.argv[1:]]\n"
    "runpy.run_module('benchmarks.run', run_name='__main__', alter_sys=True)\n"
)


def _run(tree: Path, name: str, quick: bool) -> dict[str, float]:
    cmd = [sys.executable, "-c", _OWN_TREE, "--only", name, *(["--quick"] if quick else [])]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise SystemExit(f"benchmark {name} failed in {tree}:\n{tail}")
    result = json.loads((tree / "benchmarks" / "results" / f"{name}.json").read_text())
    return _seconds(result)


def _noise(values: list[float]) -> float:
    return 2.0 * statistics.stdev(values) if len(values) > 1 else float("nan")


def compare(
    before: Path, after: Path, names: list[str], repeat: int, quick: bool
) -> dict[str, Any]:
    """Run each benchmark ``repeat`` times on both trees, interleaved; summarise."""
    table: dict[str, Any] = {}
    for name in names:
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for i in range(repeat):
            for side, tree in (("before", before), ("after", after)):
                print(f"{name}: {side} {i + 1}/{repeat}", file=sys.stderr, flush=True)
                runs[side].append(_run(tree, name, quick))
        keys = sorted(set.intersection(*(set(r) for r in runs["before"] + runs["after"])))
        rows = {}
        for k in keys:
            b = [r[k] for r in runs["before"]]
            a = [r[k] for r in runs["after"]]
            mb, ma = statistics.median(b), statistics.median(a)
            noise = max(_noise(b), _noise(a))
            rows[k] = {
                "before_median": mb,
                "after_median": ma,
                "ratio_after_before": ma / mb if mb > 0 else float("nan"),
                "noise": noise,
                "slower_than_noise": bool(ma - mb > noise),
                "before": b,
                "after": a,
            }
        table[name] = rows
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", required=True, help="the git revision before the change")
    parser.add_argument("--after", default=str(ROOT), help="the tree after (default: this one)")
    parser.add_argument("--only", required=True, help="comma-separated benchmark names")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--bench-from-after",
        action="store_true",
        help="run the after tree's benchmark code on both trees (the library is each tree's)",
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="cogstats-before-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), args.before],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        if args.bench_from_after:
            shutil.copytree(
                Path(args.after) / "benchmarks", tree / "benchmarks", dirs_exist_ok=True
            )
        try:
            table = compare(tree, Path(args.after), names, args.repeat, args.quick)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    out = {"before": args.before, "repeat": args.repeat, "quick": args.quick, "table": table}
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "compare_revisions.json").write_text(json.dumps(out, indent=1))
    for name, rows in table.items():
        print(f"\n{name}")
        for k, r in rows.items():
            flag = "  SLOWER" if r["slower_than_noise"] else ""
            print(
                f"  {k:48s} {r['before_median']:10.4f} -> {r['after_median']:10.4f} s"
                f"  x{r['ratio_after_before']:.3f}  noise {r['noise']:.4f}{flag}"
            )


if __name__ == "__main__":
    main()
