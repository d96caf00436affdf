"""The committed script that regenerates cycgraph_gate_vectors.json (docs/scripts/cycgraph_vectors).

The real backend (harness.mjs) needs a built checkout of cycgraph, which the test suite does
not have.  What is checked here instead:

- the driver, the protocol, the merge and the formatting, end to end, with stand-in
  backends in Python (``tests/cycgraph_standin_backend.py``): replaying the recorded outputs
  regenerates the committed file byte for byte; answering with cogstats' own reproductions
  of cycgraph regenerates it exactly except for the floats that come from cycgraph's
  special functions (listed in ``TOLERANT``), which agree to 1e-9 as in the reference test;
- the Node harness itself (when ``node`` is on the PATH): it parses, and it runs end to end
  against a *fake* cycgraph checkout (a few lines of JavaScript written below, not cycgraph's
  code) that exercises its plumbing: finding the built package, converting option keys to
  camelCase and result keys to snake_case, non-finite numbers, and the report's grouping.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scipy.special import stdtr

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "docs" / "scripts" / "cycgraph_vectors"
REGENERATE = SCRIPTS / "regenerate.py"
HARNESS = SCRIPTS / "harness.mjs"
STANDIN = ROOT / "tests" / "cycgraph_standin_backend.py"
VECTORS = ROOT / "tests" / "data" / "cycgraph_gate_vectors.json"
TOL = 1e-9
EVIDENCE_ORDER = ("lift", "se", "df", "p_promote", "p_evict", "trials", "baseline_runs")
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")

# The fields a cogstats stand-in cannot reproduce bit for bit: they pass through cycgraph's
# t distribution (a continued fraction; cogstats uses scipy's) or its order of summation.
# Paths with * for any list index; every other field must be identical.
TOLERANT = {
    "gate_cases.*.expected.*.evidence.lift",
    "gate_cases.*.expected.*.evidence.p_promote",
    "gate_cases.*.expected.*.evidence.p_evict",
    "welch_cases.*.expected.p_exceeds",
    "t_cdf_cases.*.expected",
}


def _driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cycgraph_vectors_regenerate", REGENERATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REGENERATE), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def _standin(*extra: str | Path) -> str:
    return shlex.join([sys.executable, str(STANDIN), *map(str, extra)])


def _differences(got: Any, want: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Leaves that differ (value or type), with key order and list lengths checked too."""
    if isinstance(want, dict):
        assert isinstance(got, dict), path
        assert list(got) == list(want), (path, list(got), list(want))
        return [d for k in want for d in _differences(got[k], want[k], f"{path}.{k}")]
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        return [d for i, w in enumerate(want) for d in _differences(got[i], w, f"{path}.{i}")]
    if got == want and type(got) is type(want):
        return []
    return [(path.lstrip("."), got, want)]


def _pattern(path: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".*", path)


def test_replayed_outputs_regenerate_the_committed_bytes(tmp_path: Path) -> None:
    out = tmp_path / "vectors.json"
    done = _run("--backend", _standin("--replay", VECTORS), "--out", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == VECTORS.read_bytes()
    # --check agrees, on the committed file itself, and writes nothing
    check = _run("--backend", _standin("--replay", VECTORS), "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "unchanged" in check.stdout


def test_cogstats_backend_regenerates_the_file_up_to_cycgraphs_special_functions(
    tmp_path: Path,
) -> None:
    out = tmp_path / "vectors.json"
    done = _run("--backend", _standin(), "--out", out)
    assert done.returncode == 0, done.stderr
    committed = json.loads(VECTORS.read_text())
    regenerated = json.loads(out.read_text())
    differences = _differences(regenerated, committed)
    for path, got, want in differences:  # today 44 floats, all in the last digits
        assert _pattern(path) in TOLERANT, (path, got, want)
        for value in (got, want):
            assert isinstance(value, int | float) and not isinstance(value, bool), path
        assert abs(got - want) <= TOL, (path, got, want)
    # every difference is one of those floats: with them put back, the bytes are the same
    driver = _driver()
    for path, _, want in differences:
        *parents, last = path.split(".")
        node: Any = regenerated
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = want
    assert driver.dumps(regenerated) == VECTORS.read_text()
    check = _run("--backend", _standin(), "--vectors", VECTORS, "--check")
    assert check.returncode == 1 and "would change" in check.stdout


def test_the_inputs_decide_which_cases_exist(tmp_path: Path) -> None:
    vectors = json.loads(VECTORS.read_text())
    driver = _driver()
    request = driver.build_request(vectors)
    text = json.dumps(request)
    for output in ("expected", "expected_reject", "expected_ids_in_order"):
        assert f'"{output}"' not in text
    assert request["policy_defaults"] == list(vectors["policy_defaults"])
    # a case with inputs only gets its output; a dropped case is gone
    vectors["t_cdf_cases"].append({"t": 0.5, "df": 3})
    del vectors["bh_cases"][0]
    vectors["retrieval_cases"][0].pop("expected_ids_in_order")
    edited = tmp_path / "edited.json"
    edited.write_text(driver.dumps(vectors))
    done = _run("--backend", _standin(), "--vectors", edited)
    assert done.returncode == 0, done.stderr
    again = json.loads(edited.read_text())
    new = again["t_cdf_cases"][-1]
    assert list(new) == ["t", "df", "expected"]
    assert new["expected"] == pytest.approx(stdtr(3, 0.5), abs=TOL)  # P(T_3 <= 0.5)
    assert len(again["bh_cases"]) == 2
    assert again["retrieval_cases"][0]["expected_ids_in_order"] == [
        "v-new",
        "legacy",
        "c-fresh",
        "c-started",
    ]
    assert list(again["retrieval_cases"][0])[-1] == "expected_ids_in_order"


def test_source_records_the_version_and_commit(tmp_path: Path) -> None:
    out = tmp_path / "vectors.json"
    backend = _standin("--replay", VECTORS)
    done = _run("--backend", backend, "--out", out, "--version", "9.9.9", "--commit", "abc1234")
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    assert got["source"] == (
        "Recorded by running the gate, retriever and statistics modules of wmcmahan/cycgraph "
        "(package @cycgraph/memory 9.9.9, commit abc1234) on these inputs."
    )
    committed = json.loads(VECTORS.read_text())
    assert got["source"] != committed["source"]
    assert {k: v for k, v in got.items() if k != "source"} == {
        k: v for k, v in committed.items() if k != "source"
    }
    assert _run("--backend", backend, "--out", out, "--commit", "abc1234").returncode != 0


def test_infinity_is_written_as_1e309_and_integral_numbers_as_javascript_prints_them() -> None:
    driver = _driver()
    assert driver.dumps({"df": math.inf, "x": -math.inf}) == '{\n "df": 1e309,\n "x": -1e309\n}'
    assert json.loads("1e309") == math.inf
    assert driver._number(8.0, "x") == 8 and isinstance(driver._number(8.0, "x"), int)
    assert driver._number("Infinity", "x") == math.inf
    assert isinstance(driver._number(1e21, "x"), float)
    with pytest.raises(driver.ProtocolError):
        driver._number("NaN", "x")
    with pytest.raises(driver.ProtocolError):
        driver._number(True, "x")


def test_a_report_that_does_not_answer_the_candidates_is_refused() -> None:
    driver = _driver()
    report = {"promoted": [{"fact_id": "a"}], "evicted": [], "held": []}
    with pytest.raises(driver.ProtocolError, match="candidates"):
        driver.gate_entries(["a", "b"], report, "gate_cases[0]")
    odd = {"promoted": [{"fact_id": "a", "evidence": {"lift": 1}}], "evicted": [], "held": []}
    with pytest.raises(driver.ProtocolError, match="RetentionEvidence changed"):
        driver.gate_entries(["a"], odd, "gate_cases[0]")


# --------------------------------------------------------------------------- Node harness


@needs_node
def test_harness_parses() -> None:
    done = subprocess.run(
        [str(NODE), "--check", str(HARNESS)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


# A fake @cycgraph/memory for the harness's plumbing: camelCase options and results like
# cycgraph >= 0.6.0, a report grouped as cycgraph groups it, an infinite df.  Its numbers
# mean nothing.
FAKE_MEMORY = """
const DEFAULTS = { minTrials: 3, promoteMargin: 0.05, evictMargin: 0.05,
  candidateTag: 'candidate', verifiedTag: 'verified', decisionRule: 'inference',
  promoteConfidence: 0.9, evictConfidence: 0.9, noiseFloorSd: 0.1,
  multipleComparison: 'bh', sequentialControl: 'doubling' };
export const RetentionPolicySchema = { parse: (p = {}) => ({ ...DEFAULTS, ...p }) };
export class InMemoryMemoryStore {
  constructor() { this.facts = new Map(); }
  async putFact(f) { this.facts.set(f.id, f); }
  async findFacts(filter = {}) {
    const tags = filter.tags ?? [];
    return [...this.facts.values()].filter((f) => f.tags.some((t) => tags.includes(t)));
  }
}
export class InMemoryOutcomeLedger {
  constructor() { this.runs = new Map(); }
  async recordOutcome(o) { this.runs.set(o.run_id, o); }
  trials(id) { return [...this.runs.values()].filter((r) => r.fact_ids.includes(id)).length; }
}
export async function evaluateRetention(store, ledger, policy = {}) {
  const cfg = RetentionPolicySchema.parse(policy);
  const report = { promoted: [], evicted: [], held: [] };
  const facts = await store.findFacts({ tags: [cfg.candidateTag] });
  facts.forEach((f, i) => {
    const trials = ledger.trials(f.id);
    const ev = cfg.decisionRule === 'inference'
      ? { evidence: { lift: 0.25, se: 0, df: Infinity, pPromote: 1, pEvict: 0, trials,
                      baselineRuns: ledger.runs.size - trials, alphaBracket: 1 } }
      : {};
    if (i % 3 === 0) report.held.push({ factId: f.id, trials, ...ev });
    else if (i % 3 === 1) report.promoted.push({ factId: f.id, ...ev });
    else report.evicted.push({ factId: f.id, reason: 'eval-gate:no_lift', ...ev });
  });
  return report;
}
export const welchLift = (i) => ({ lift: i.meanA - i.meanB, se: 0, df: Infinity, pExceeds: 1 });
export const studentTCdf = (t, df) => (t === 0 ? 0.5 : 0.25);
export const benjaminiHochberg = (ps, q) => ps.map((p) => p <= q);
export const requiredTrials = ({ effect, sd }) => Math.ceil(sd / effect);
export async function retrieveGatedLessons(store, options) {
  const facts = await store.findFacts({ tags: options.tags });
  return facts.slice(0, options.maxFacts ?? 10);
}
"""


def _fake_checkout(root: Path) -> Path:
    package = root / "packages" / "memory"
    (package / "dist").mkdir(parents=True)
    manifest = {
        "name": "@cycgraph/memory",
        "version": "0.0.0-fake",
        "type": "module",
        "exports": {".": {"types": "./dist/index.d.ts", "import": "./dist/index.js"}},
    }
    (package / "package.json").write_text(json.dumps(manifest))
    (package / "dist" / "index.js").write_text(FAKE_MEMORY)
    return root


@needs_node
def test_harness_runs_end_to_end_against_a_fake_checkout(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path / "cycgraph")
    out = tmp_path / "vectors.json"
    done = _run("--cycgraph", checkout, "--out", out, "--commit", "fake000", "--node", str(NODE))
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    committed = json.loads(VECTORS.read_text())
    assert "@cycgraph/memory 0.0.0-fake, commit fake000" in got["source"]
    defaults = got["policy_defaults"]
    assert list(defaults) == list(committed["policy_defaults"])
    assert defaults["max_trials"] is None and defaults["min_trials"] == 3
    for case in got["gate_cases"]:
        assert [e["fact_id"] for e in case["expected"]] == case["candidates"]
        inference = case["policy"].get("decision_rule", "inference") == "inference"
        for i, entry in enumerate(case["expected"]):
            assert entry["decision"] == ("hold", "promote", "evict")[i % 3]
            trials = sum(entry["fact_id"] in r["fact_ids"] for r in case["runs"])
            if entry["decision"] == "hold":
                assert entry["trials"] == trials
            evidence = entry["evidence"]
            assert (evidence is not None) == inference
            if evidence is not None:
                assert list(evidence) == [*EVIDENCE_ORDER, "alpha_bracket"]
                assert evidence["df"] == math.inf and evidence["alpha_bracket"] == 1
                assert evidence["baseline_runs"] == len(case["runs"]) - trials
    for case in got["welch_cases"]:
        assert case["expected"]["df"] == math.inf
        assert case["expected"]["lift"] == case["mean_a"] - case["mean_b"]
    assert '"df": 1e309' in out.read_text()
    assert [c["expected"] for c in got["required_trials_cases"]] == [
        math.ceil(c["sd"] / c["effect"]) for c in committed["required_trials_cases"]
    ]
    for case in got["bh_cases"]:
        assert case["expected_reject"] == [p <= case["q"] for p in case["pvalues"]]
    ids = [f["id"] for f in committed["retrieval_store"]]
    for case in got["retrieval_cases"]:
        assert case["expected_ids_in_order"] == ids[: case.get("max_facts", 10)]


@needs_node
def test_harness_says_how_to_build_a_checkout_that_is_not_built(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path / "cycgraph")
    (checkout / "packages" / "memory" / "dist" / "index.js").unlink()
    done = _run("--cycgraph", checkout, "--commit", "fake000", "--out", tmp_path / "v.json")
    assert done.returncode != 0
    assert "npm run build --workspace=packages/memory" in done.stderr
    assert not (tmp_path / "v.json").exists()
