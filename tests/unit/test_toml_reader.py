"""The one typed TOML reader (cogstats._toml): errors name key and file; all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogstats._toml import Problems, SpecErrors, TomlTable, read_toml
from cogstats._validation import SpecError


def test_the_three_specs_share_one_reader() -> None:
    from cogstats.admission import spec as admission_spec
    from cogstats.sim import spec as sim_spec
    from cogstats.sweep import spec as sweep_spec

    assert sim_spec._Reader is TomlTable
    assert admission_spec._Table is TomlTable
    assert sweep_spec.read_toml is read_toml


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.number("x"), "is required"),
        (lambda t: t.integer("b", 1), "must be an integer; got True"),
        (lambda t: t.number("s", 1.0), "must be a number; got 'a'"),
        (lambda t: t.number("n", 1.0, positive=True), "must be > 0; got -1.0"),
        (lambda t: t.integer("n", 1, maximum=-5), "must be <= -5; got -1"),
        (lambda t: t.choice("s", "b", ["b", "c"]), "must be one of ['b', 'c']; got 'a'"),
        (lambda t: t.string("e", "x"), "must be a non-empty string; got ''"),
        (lambda t: t.choices("l", ["a"], ["a", "b"]), "entries must be among ['a', 'b']; got 'z'"),
        (lambda t: t.table_list("s"), "must be an array of tables; got 'a'"),
        (lambda t: t.done(["n"]), "unknown key"),
    ],
)
def test_errors_name_the_dotted_key_and_file(call, message) -> None:  # type: ignore[no-untyped-def]
    data = {"b": True, "s": "a", "n": -1, "e": "", "l": ["z"]}
    table = TomlTable({"inner": data}, "", "f.toml").table("inner")
    with pytest.raises(SpecError, match="f.toml, key 'inner.") as info:
        call(table)
    assert message in str(info.value)


def test_empty_strings_allowed_when_asked() -> None:
    assert TomlTable({"d": ""}, "", None).string("d", "x", empty=True) == ""


def test_problems_collect_every_error_and_go_on_with_defaults() -> None:
    problems = Problems()
    top = TomlTable(
        {"runs": "ten", "gate": {"alpha": 2.0, "alpah": 1}, "lessons": 3, "extra": 1},
        "",
        "s.toml",
        problems=problems,
    )
    assert top.integer("runs", 10, minimum=1) == 10
    gate = top.table("gate")
    assert gate.number("alpha", 0.05, maximum=1.0) == 0.05
    gate.done()
    assert top.table_list("lessons") == []
    with problems.catch():
        raise SpecError("bad cell", key="grid", source="s.toml")
    top.done()
    keys = [e.key for e in problems.errors]
    assert keys == ["runs", "gate.alpha", "gate.alpah", "lessons", "grid", "extra"]
    with pytest.raises(SpecErrors) as info:
        problems.check()
    text = str(info.value)
    assert text.startswith("6 errors:") and "key 'gate.alpah': unknown key" in text
    assert info.value.source == "s.toml" and len(info.value.errors) == 6


def test_one_problem_is_raised_as_itself() -> None:
    problems = Problems()
    TomlTable({"n": "x"}, "", "s.toml", problems=problems).integer("n", 1)
    with pytest.raises(SpecError, match="key 'n': must be an integer") as info:
        problems.check()
    assert not isinstance(info.value, SpecErrors)
    Problems().check()  # nothing found: nothing raised


def test_read_toml(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="spec file not found"):
        read_toml(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("x = [\n")
    with pytest.raises(SpecError, match="bad.toml: malformed TOML"):
        read_toml(bad)
