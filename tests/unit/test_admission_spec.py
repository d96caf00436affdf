"""The admission spec: the shipped file, validation at the door (key and file named),
round trips and dotted-path changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cogstats._validation import SpecError
from cogstats.admission import AdmissionSpec, load_admission_spec
from cogstats.admission.defences import AdmissionRules, ReadFilterOptions
from cogstats.admission.index import HNSWOptions

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "simulations" / "write_path_admission.toml"


def test_shipped_spec_loads_with_the_field_reports_rules() -> None:
    spec = load_admission_spec(SHIPPED)
    assert spec.k == 10
    assert spec.defences == ("clean", "none", "read_filter", "admission", "quarantine")
    assert spec.indexes == ("hnsw", "ivf")
    rules = spec.rules()
    assert isinstance(rules, AdmissionRules)
    assert (rules.min_provenance, rules.max_centroid_distance) == (0.6, 0.35)
    assert spec.defence_options["read_filter"] == ReadFilterOptions(overfetch=0)
    assert spec.index_options["hnsw"] == HNSWOptions(m=32, ef_construction=64, ef_search=32)
    assert 64 <= spec.world.dim <= 384
    assert spec.source == str(SHIPPED)


def test_round_trip_and_with_values() -> None:
    spec = load_admission_spec(SHIPPED)
    again = AdmissionSpec.from_dict(spec.to_dict(), source=spec.source)
    assert again.to_dict() == spec.to_dict()
    changed = spec.with_values({"world.dim": 64, "defence.admission.min_provenance": 0.5})
    assert changed.world.dim == 64 and changed.rules().min_provenance == 0.5
    assert spec.world.dim == 128  # the original is unchanged
    with pytest.raises(SpecError, match="names no value"):
        spec.with_values({"world.dimension": 64})


def _error(tmp_path: Path, text: str) -> SpecError:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_admission_spec(path)
    assert str(path) in str(err.value)  # every error names the file
    return err.value


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("[world]\ndimension = 64\n", "world.dimension", "unknown key"),
        ("[world]\ndim = 32\n", "world.dim", "must be >= 64"),
        ("[world]\ndim = 512\n", "world.dim", "must be <= 384"),
        ('[world]\ndim = "big"\n', "world.dim", "must be an integer"),
        ('defences = ["clean", "admision"]\n', "defences", "did you mean 'admission'"),
        ('defences = ["none", "admission"]\n', "defences", "must include 'clean'"),
        ('indexes = ["hnsw", "hnsw"]\n', "indexes", "twice"),
        ("[defence.admission]\nmin_provenance = 1.5\n", "defence.admission", "min_provenance"),
        (
            "[defence.admission]\nmin_provenace = 0.5\n",
            "defence.admission.min_provenace",
            "did you mean 'min_provenance'",
        ),
        ("[defence.admision]\n", "defence.admision", "names no registered part"),
        ("[index.hnsw]\nm = 1\n", "index.hnsw", "m must be >= 2"),
        ("[poison]\nper_subject = [3, 1]\n", "poison.per_subject", "min <= max"),
        ("[poison.off_centroid]\noffset = [1.0, 0.5]\n", "poison.off_centroid.offset", "low"),
        ("[benign.provenance]\na = 0\n", "benign.provenance.a", "must be > 0"),
        ("[consolidation]\nlaundering_share = 0\n", "consolidation.laundering_share", "> 0"),
        ("[monitor]\nonset = 5\nwarmup = 10\n", "monitor.onset", "warmup <= onset"),
        ('[monitor]\nindex = "annoy"\n', "monitor.index", "must be one of"),
        ("[roc]\nmin_provenance = [0.5, 1.5]\n", "roc.min_provenance", "[0.0, 1.0]"),
    ],
)
def test_errors_name_key_and_file(tmp_path: Path, text: str, key: str, message: str) -> None:
    err = _error(tmp_path, text)
    assert err.key == key
    assert message in str(err)


def test_malformed_toml_and_missing_file(tmp_path: Path) -> None:
    err = _error(tmp_path, "[world\n")
    assert "malformed TOML" in str(err)
    with pytest.raises(FileNotFoundError):
        load_admission_spec(tmp_path / "absent.toml")


def test_faiss_is_imported_only_when_an_index_is_built() -> None:
    code = (
        "import sys, json\n"
        "from cogstats.admission import load_admission_spec, generate_world, DEFENCES\n"
        f"spec = load_admission_spec({str(SHIPPED)!r}).with_values({{'world.tenants': 2}})\n"
        "world = generate_world(spec, rng=0)\n"
        "before = 'faiss' in sys.modules\n"
        "from cogstats.admission import make_index\n"
        "make_index('flat', world.vectors.shape[1]).build(world.vectors[:5], [0, 1, 2, 3, 4])\n"
        "print(json.dumps([before, 'faiss' in sys.modules, 'tqdm' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True, False]
