"""``cogstats report`` after an install from a wheel, outside the repository (issue 11, 5).

The wheel is built from a copy of the tracked files (``uv build``, offline from uv's
cache first: ``make`` filled it when it installed the environment), installed with
``--no-deps`` into a fresh virtual environment whose dependencies are those of this
environment (its site-packages added by a ``.pth`` line, its Jupyter data on
``JUPYTER_PATH``), and run from an empty folder.  The report must find its notebook and
its data in ``<venv>/share/cogstats`` (not in this checkout), and write its page and its
tables.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("pyproject.toml", "README.md", "cogstats", "notebooks", "simulations", "data")


def _uv() -> str:
    exe = Path(sys.executable).with_name("uv")
    return str(exe) if exe.exists() else (shutil.which("uv") or "uv")


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)


def _copy_tracked(dest: Path) -> None:
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", *SHIPPED], cwd=ROOT)
    names = listed.stdout.split() if listed.returncode == 0 else []
    if not names:  # not a git checkout: copy the folders
        for name in SHIPPED:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, dest / name)
        return
    for name in names:
        if "__pycache__" in name or not (ROOT / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)


@pytest.mark.slow
def test_report_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    src, dist, venv, work = (tmp_path / n for n in ("src", "dist", "venv", "work"))
    for folder in (src, work):
        folder.mkdir()
    _copy_tracked(src)
    build = _run([_uv(), "build", "--wheel", "--offline", "--out-dir", str(dist), str(src)])
    if build.returncode != 0:  # uv's cache lacks the build backend: fetch it
        build = _run([_uv(), "build", "--wheel", "--out-dir", str(dist), str(src)])
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("cogstats-*.whl")
    made = _run([_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)])
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = _run(
        [_uv(), "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(wheel)]
    )
    assert installed.returncode == 0, installed.stderr
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    # the dependencies: this environment's packages, after the wheel's own
    Path(purelib.stdout.strip(), "zz_cogstats_test_deps.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    where = _run(
        [
            str(python),
            "-c",
            "import cogstats; from cogstats.reports.resources import resource_root; "
            "print(cogstats.__file__); print(resource_root())",
        ],
        cwd=work,
        env=env,
    )
    assert where.returncode == 0, where.stderr
    module, root = where.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(root) == venv / "share" / "cogstats"
    listing = _run([str(venv / "bin" / "cogstats"), "report"], cwd=work, env=env)
    assert listing.returncode == 0 and "ledger_audit:" in listing.stdout, listing.stderr
    run = _run(
        [str(venv / "bin" / "cogstats"), "report", "ledger_audit", "--quick", "--out", "out"],
        cwd=work,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    page = (work / "out" / "ledger_audit.html").read_text(encoding="utf-8")
    assert "poison_crater_ledger.csv" in page  # the bundled ledger, found in share/cogstats
    for path in (str(tmp_path), str(ROOT)):
        assert path not in page
    decisions = pl.read_csv(work / "out" / "ledger_audit_decisions.csv")
    assert {"fact_id", "gate", "decision", "why"} <= set(decisions.columns)
