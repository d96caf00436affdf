"""The example CI workflows under docs/ci run as written.

Each workflow's ``run:`` steps (all but the ``pip install`` one: the suite runs in the
checkout's environment) are executed with bash the way GitHub Actions does
(``bash -eo pipefail``), in a temporary folder holding a copy of ``simulations/`` and the
ledger the workflow names, with the workflow's own ``env:``; only the sweep's replicates
are made small.  The sweep workflow's last step, ``cogstats sweep check``, is then run
with bounds that pass and bounds that fail, and its exit status checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (a dependency of the notebook extra)")

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "docs" / "ci"


def _workflow(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CI / name).read_text())
    assert isinstance(data, dict)
    return data


def _steps(workflow: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (name, script) of every ``run:`` step but the install."""
    out = []
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            script = step.get("run")
            if script is None or "pip install" in script:
                continue
            out.append((step.get("name", script.splitlines()[0]), script))
    return out


def _env(workflow: dict[str, Any], **overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update({k: str(v) for k, v in workflow.get("env", {}).items()})
    env.update(overrides)
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_every_workflow_is_valid_yaml_with_a_job() -> None:
    names = sorted(p.name for p in CI.glob("*.yml"))
    assert "ledger-audit.yml" in names and "sweep-check.yml" in names
    for name in names:
        wf = _workflow(name)
        assert wf["jobs"], name
        # PyYAML reads the key ``on`` as True
        assert True in wf or "on" in wf, name


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Run the sweep workflow's steps once (6 replicates a cell)."""
    wf = _workflow("sweep-check.yml")
    work = tmp_path_factory.mktemp("sweep-ci")
    shutil.copytree(ROOT / "simulations", work / "simulations")
    env = _env(wf, REPLICATES="6")
    steps = _steps(wf)
    assert [n for n, _ in steps][-1].startswith("Fail when")
    for name, script in steps[:-1]:
        done = _bash(script, work, env)
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
    return work, wf


@pytest.mark.slow
def test_sweep_workflow_renders_the_reports(sweep_run: tuple[Path, dict[str, Any]]) -> None:
    work, wf = sweep_run
    site = work / wf["env"]["SITE"]
    explorer = (site / "threshold_explorer.html").read_text()
    assert 'class="cogstats-interactive"' in explorer and "vegaEmbed" in explorer
    assert (site / "index.html").read_text() == explorer
    assert '<svg class="marks"' in (site / "tradeoffs.html").read_text()
    store = work / wf["env"]["STORE"]
    assert (store / "manifest.json").is_file()


@pytest.mark.slow
def test_sweep_check_step_exit_codes(sweep_run: tuple[Path, dict[str, Any]]) -> None:
    work, wf = sweep_run
    _, check = _steps(wf)[-1]
    # every rate is <= 1: passes; every cell's false eviction rate is >= 0 > -1: fails
    ok = _bash(check, work, _env(wf, MAX="1", MCSE="0"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("PASS: false_eviction_rate <= 1 in every cell")
    bad = _bash(check, work, _env(wf, MAX="-1", MCSE="0"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert bad.stdout.startswith("FAIL: false_eviction_rate <= -1")
    assert "cell 0 (gate.min_trials=2" in bad.stdout and "cell 15 (" in bad.stdout
    # the lower bound, and a usage error (exit 2, "did you mean")
    store = wf["env"]["STORE"]
    low = _bash(f'cogstats sweep check "{store}" --metric poison_recall --min 1.5', work, _env(wf))
    assert low.returncode == 1 and "< 1.5" in low.stdout, low.stdout + low.stderr
    typo = _bash(f'cogstats sweep check "{store}" --metric false_evict --max 1', work, _env(wf))
    assert typo.returncode == 2 and "did you mean 'false_eviction_rate'" in typo.stderr


@pytest.mark.slow
def test_ledger_audit_workflow(tmp_path: Path) -> None:
    wf = _workflow("ledger-audit.yml")
    ledger = tmp_path / wf["env"]["LEDGER"]
    ledger.parent.mkdir(parents=True)
    shutil.copy(ROOT / "data" / "poison_crater_ledger.csv", ledger)
    env = _env(wf)
    for name, script in _steps(wf):
        done = _bash(script, tmp_path, env)
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
    assert "<svg" in (tmp_path / "site" / "index.html").read_text()
    assert (tmp_path / "site" / "ledger_audit_decisions.csv").is_file()
