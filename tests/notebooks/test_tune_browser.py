"""cogstats.tune in a real JupyterLab, driven by a real browser.

The test starts JupyterLab on 127.0.0.1 (a free port, a token, a fresh config and runtime
folder, the app exposed to the page for running the cells), writes a notebook calling
``cogstats.tune`` on S2, opens it with playwright driving the system Chromium (Debian's
``chromium``; ``.ci/run`` installs it when missing), runs the cells, then moves a control
(the gate's decision rule, a drop-down, and ``min_trials``, a slider's readout) and
observes the fitness chart's drawn marks (its SVG) and the metrics table's text change.

It skips only where no browser can be had: no Chromium at /usr/bin/chromium (install it
with ``apt-get update && apt-get install -y chromium``) or no playwright (``pip install
playwright``; its own browser download is not needed).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
S2 = ROOT / "simulations" / "poison_crater.toml"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
HOW = "install it with: apt-get update && apt-get install -y chromium; pip install playwright"
TOKEN = "cogstats-tune-test"


def _chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    found = shutil.which("chromium")
    if found is None:
        pytest.skip(f"no Chromium at {CHROMIUM}; {HOW}")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _notebook(folder: Path) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import cogstats\n"
            f"t = cogstats.tune({str(S2)!r}, replicates=100, seed=1, debounce=0.05)\n"
            "t"
        )
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "tune.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    executable = _chromium()
    pytest.importorskip("playwright.sync_api", reason=HOW)
    pytest.importorskip("jupyterlab")
    # load (or, on a fresh clone, compile) the simulator's kernel once, outside the timing
    from cogstats.sim import load_spec, simulate

    simulate(load_spec(S2).scenario, replicates=2, rng=0, progress=False)
    folder = Path(tempfile.mkdtemp(prefix="cogstats-tune-lab-"))
    _notebook(folder)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(folder / ".config"),
        "JUPYTER_RUNTIME_DIR": str(folder / ".runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(folder / ".workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings"),
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    log = open(folder / "lab.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={folder}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(
                        "JupyterLab did not start:\n" + (folder / "lab.log").read_text()[-3000:]
                    ) from None
                time.sleep(0.3)
        os.environ["COGSTATS_TEST_CHROMIUM"] = executable
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.slow
def test_moving_a_control_updates_the_chart_and_the_metrics(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="cogstats-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=os.environ["COGSTATS_TEST_CHROMIUM"],
            headless=True,
            args=FLAGS,
            viewport={"width": 1500, "height": 1100},
        )
        try:
            page = context.new_page()
            page.goto(f"{lab}/lab/tree/tune.ipynb?token={TOKEN}", wait_until="load")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                ".connectionStatus === 'connected'",
                timeout=60_000,
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            metrics = page.locator(".cogstats-tune-metrics").first
            metrics.wait_for(state="visible", timeout=60_000)
            chart = page.locator(".jp-OutputArea-output svg.marks").first
            chart.wait_for(state="visible", timeout=30_000)
            _until(
                lambda: "tuned" in chart.inner_html() and "baseline" in chart.inner_html(),
                30,
                "the fitness chart to draw both curves",
            )
            status = page.locator(".cogstats-tune-status").first
            text_before, marks_before = metrics.inner_text(), chart.inner_html()
            assert "regret" in text_before and "±" in text_before

            # a drop-down: the decision rule
            rule = page.locator(".widget-dropdown", has_text="decision_rule").locator("select")
            assert rule.input_value() == "margin"
            rule.select_option("inference")
            _until(
                lambda: metrics.inner_text() != text_before and chart.inner_html() != marks_before,
                30,
                "the metrics and the chart to change after the decision rule moved",
            )
            # a slider, through its editable readout: min_trials 2 -> 4
            text_mid, marks_mid = metrics.inner_text(), chart.inner_html()
            slider = page.locator(".widget-slider", has_text="min_trials")
            readout = slider.locator(".widget-readout")
            readout.click()
            page.keyboard.press("Control+A")
            page.keyboard.type("4")
            page.keyboard.press("Enter")
            _until(
                lambda: metrics.inner_text() != text_mid and chart.inner_html() != marks_mid,
                30,
                "the metrics and the chart to change after min_trials moved",
            )
            assert "updated in" in status.inner_text()
            assert not page.locator(".cogstats-tune-error").count()
            shot = os.environ.get("COGSTATS_TUNE_SCREENSHOT")
            if shot:  # for looking at the widget (docs, reviews)
                page.screenshot(path=shot, full_page=True)
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)
