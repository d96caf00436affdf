"""Sweep store recovery: damaged parts named, set aside, re-run; a damaged manifest (issue 19)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from cogstats.sweep import read_sweep, sweep_from_dict, sweep_spec
from cogstats.sweep.store import StoreCorruptError, StoreMismatchError, StoreWarning

SPEC = {
    "runs": 12,
    "replicates": 6,
    "seed": 3,
    "lessons": {"listed": [{"id": "bad", "effect": -0.3, "kind": "poison"}]},
    "grid": {"gate.min_trials": [2, 3, 4]},
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("store") / "s"
    sweep_spec(sweep_from_dict(SPEC), out=out, workers=1, progress=False)
    return out


def _copy(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "s"
    shutil.copytree(finished, out)
    return out


@pytest.mark.parametrize(
    "damage",
    [b"", b"PAR1garbage", b"not parquet at all", "truncate", "other"],
)
def test_damaged_part_is_named_set_aside_and_rerun(
    finished: Path, tmp_path: Path, damage: bytes | str
) -> None:
    out = _copy(finished, tmp_path)
    parts = sorted((out / "parts").iterdir())
    victim = parts[1]
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:40])
    elif damage == "other":  # a valid part of another cell under this cell's name
        victim.write_bytes(parts[0].read_bytes())
    else:
        assert isinstance(damage, bytes)
        victim.write_bytes(damage)
    with pytest.raises(StoreCorruptError, match=victim.name):
        read_sweep(out)
    with pytest.warns(StoreWarning, match=victim.name):
        result = sweep_spec(sweep_from_dict(SPEC), out=out, workers=1, progress=False)
    assert result.complete
    assert len(list((out / "damaged").iterdir())) == 1
    assert_frame_equal(read_sweep(out), read_sweep(finished))


@pytest.mark.parametrize("damage", [b"", b'{"format": 1, "spec"', b"[1, 2]", b"\xff\xfe"])
def test_damaged_manifest_is_a_clear_error_with_the_way_back(
    finished: Path, tmp_path: Path, damage: bytes
) -> None:
    out = _copy(finished, tmp_path)
    manifest = out / "manifest.json"
    manifest.write_bytes(damage)
    for call in (
        lambda: read_sweep(out),
        lambda: sweep_spec(sweep_from_dict(SPEC), out=out, workers=1, progress=False),
    ):
        with pytest.raises(StoreCorruptError, match="move the manifest aside") as info:
            call()
        assert str(manifest) in str(info.value)
    manifest.rename(out / "manifest.json.damaged")  # the advice, followed
    (out / "parts" / sorted((out / "parts").iterdir())[2].name).unlink()
    result = sweep_spec(sweep_from_dict(SPEC), out=out, workers=1, progress=False)
    assert result.complete and result.ran == 1  # the two kept cells were not re-run
    assert_frame_equal(read_sweep(out), read_sweep(finished))


def test_manifestless_store_of_another_sweep_is_refused(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    (out / "manifest.json").unlink()
    with pytest.raises(StoreMismatchError, match="not a cell of this sweep"):
        sweep_spec(sweep_from_dict({**SPEC, "seed": 4}), out=out, workers=1, progress=False)
