"""The repository stands alone: nothing a user receives refers to the sibling ``shared``
folder the project was designed from (issue 11, part 7).

Every text file under the tracked top-level folders is scanned; the facts the tests
need (cycgraph's vectors, the demo ledgers) live in ``tests/data`` and ``data`` with
their sources noted, and the reference semantics in ``docs/``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = "../" + "shared"  # split so this file does not match itself
SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".yml", ".yaml", ".cfg", ".txt", ".json", ""}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        return [ROOT / p for p in out]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist)
        return [p for p in ROOT.rglob("*") if ".venv" not in p.parts]


def test_no_file_refers_to_the_design_folder() -> None:
    offenders = []
    for path in _tracked_files():
        if not path.is_file() or path.suffix not in SUFFIXES:
            continue
        if path.stat().st_size > 2_000_000:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN in line:
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:80]}")
    assert not offenders, "references to the design folder:\n" + "\n".join(offenders)
