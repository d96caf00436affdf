"""Every ```bash, ```sh and ```python block of README.md runs as written.

The blocks run in README order in one fresh folder holding copies of the checkout's
``data/`` and ``simulations/`` (what a fresh clone has), as one driver process: Python
blocks share one namespace (a later block may use a name an earlier one defined, as a
reader's session would), shell blocks run with ``bash -eo pipefail`` and the environment's
``cogstats`` first on PATH.  Markers on the line before a block:

- ``<!-- doc-test: skip -->``: not run (long, like ``make demo``, or meant to fail);
- ``<!-- doc-test: file NAME -->``: the block is also saved as ``NAME`` in the folder
  before it runs (the custom-gate module a later command imports).

The whole README runs well under 3 minutes (issue 20's budget).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_FENCE = re.compile(r"^```(bash|sh|python)\s*$")
_MARKER = re.compile(r"<!--\s*doc-test:\s*(skip|file\s+(\S+))\s*-->")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: bool
    file: str | None


def readme_blocks(text: str) -> list[Block]:
    """Return the runnable fenced blocks of a Markdown text, with their markers."""
    lines = text.splitlines()
    out: list[Block] = []
    k = 0
    while k < len(lines):
        m = _FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"README.md:{k + 1}: unclosed code block"
        before = next((lines[j] for j in range(k - 1, -1, -1) if lines[j].strip()), "")
        # a block right after another (no text between) takes the marker of the first
        marker = _MARKER.search(before)
        out.append(
            Block(
                line=k + 1,
                lang=m.group(1),
                code="\n".join(lines[k + 1 : end]) + "\n",
                skip=bool(marker and marker.group(1) == "skip"),
                file=marker.group(2) if marker and marker.group(2) else None,
            )
        )
        k = end + 1
    return out


def test_marker_parsing() -> None:
    text = (
        "x\n```bash\necho a\n```\n<!-- doc-test: skip -->\n```python\n1/0\n```\n"
        "<!-- doc-test: file m.py -->\n```python\nX = 1\n```\n```text\nno\n```\n"
    )
    blocks = readme_blocks(text)
    assert [(b.line, b.lang, b.skip, b.file) for b in blocks] == [
        (2, "bash", False, None),
        (6, "python", True, None),
        (10, "python", False, "m.py"),
    ]


_DRIVER = r"""
import json, subprocess, sys, time, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__readme__"}
for b in blocks:
    where = f"README.md:{b['line']} ({b['lang']})"
    t0 = time.perf_counter()
    if b["file"]:
        open(b["file"], "w").write(b["code"])
    if b["lang"] == "python":
        try:
            exec(compile(b["code"], where, "exec"), ns)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED {where}", flush=True)
            sys.exit(1)
    else:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               b["code"]], capture_output=True, text=True)
        if done.returncode:
            print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
            print(f"FAILED {where}: exit {done.returncode}", flush=True)
            sys.exit(1)
    print(f"ok {where} {time.perf_counter() - t0:.1f} s", flush=True)
"""


def _drive(blocks: list[Block], cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "blocks.json").write_text(json.dumps([b.__dict__ for b in blocks]))
    (cwd / "driver.py").write_text(_DRIVER)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return subprocess.run(
        [sys.executable, "driver.py", "blocks.json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_failing_block_fails(tmp_path: Path) -> None:
    text = (
        "<!-- doc-test: file m.py -->\n```python\nX = 2\n```\n"
        "```bash\npython -c 'import m; assert m.X == 2'\n```\n"
        "```python\nassert X == 2\n```\n```bash\nfalse | true\nexit 3\n```\n"
    )
    done = _drive(readme_blocks(text), tmp_path)
    assert done.returncode == 1
    assert "ok README.md:2 (python)" in done.stdout and "ok README.md:8 (python)" in done.stdout
    # pipefail, as on GitHub Actions: `false | true` fails the block before `exit 3`
    assert "FAILED README.md:11 (bash): exit 1" in done.stdout


@pytest.mark.slow
def test_readme_blocks_run_as_written(tmp_path: Path) -> None:
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    run = [b for b in blocks if not b.skip]
    assert len(run) >= 8, "the README's snippets were not found"
    for folder in ("data", "simulations"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    started = time.perf_counter()
    done = _drive(run, tmp_path)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert done.stdout.count("\nok ") + done.stdout.startswith("ok ") == len(run), done.stdout
    assert elapsed < 180, f"the README's snippets took {elapsed:.0f} s:\n{done.stdout}"
