"""Hostile ledger input: each case is a clear error or the right reading, never a hang.

Every input is generated here (no fixture files): wide headers, numbers in other digit
systems, control and invisible characters in ids.  Speed is not asserted (it is measured
in benchmarks/hostile_input.py); the wide header's test only has to finish.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError

WIDE = 100_000


def _wide_csv(path: Path, names: list[str]) -> Path:
    header = ",".join(["run_id", "score", "fact_ids", *names])
    rows = [
        f"r{i},0.{i + 1},a b,{','.join(str((i + j) % 7) for j in range(len(names)))}"
        for i in range(2)
    ]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_header_of_100000_columns_reads_every_column(tmp_path: Path) -> None:
    names = [f"c{j}" for j in range(WIDE)]
    ledger = Ledger.read(_wide_csv(tmp_path / "wide.csv", names))
    assert ledger.covariates == names
    assert ledger.run_ids == ("r0", "r1") and ledger.fact_ids == ("a", "b")
    assert ledger.covariate(f"c{WIDE - 1}").to_list() == [(WIDE - 1) % 7, WIDE % 7]
    assert ledger.covariate("c3").dtype.is_integer()


def test_a_wide_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    names = [f"c{j}" for j in range(WIDE)]
    names[-1] = "c17"
    with pytest.raises(LedgerError, match=r"duplicate column\(s\) \['c17'\] in the header"):
        Ledger.read(_wide_csv(tmp_path / "wide.csv", names))
    # a missing required column: the message lists the first columns and a count
    path = tmp_path / "nameless.csv"
    path.write_text(
        "run," + ",".join(f"c{j}" for j in range(WIDE)) + "\nr1," + "1," * (WIDE - 1) + "1\n"
    )
    with pytest.raises(LedgerError, match=rf"\.\.\. \({WIDE + 1 - 40} more\)\]") as err:
        Ledger.read(path)
    assert len(str(err.value)) < 2_000


def test_a_lesson_table_with_a_wide_header(tmp_path: Path) -> None:
    path = tmp_path / "lessons.csv"
    extra = [f"x{j}" for j in range(WIDE)]
    path.write_text(
        ",".join(["id", "created_at", *extra])
        + "\n"
        + "L1,1,"
        + ",".join("0" for _ in extra)
        + "\n"
    )
    table = Ledger.read_lessons(path)
    assert table.width == WIDE + 3 and table["id"].to_list() == ["L1"]  # (+ status)
    path.write_text(",".join(["id", "created_at", *extra, "x5"]) + "\n")
    with pytest.raises(LedgerError, match=r"duplicate column\(s\) \['x5'\]"):
        Ledger.read_lessons(path)


# ---------------------------------------------------------------- numbers
#: numbers Python's float()/int() read but JSON does not: other digit systems, underscores
PYTHON_ONLY = {
    "fullwidth one": "\uff11",
    "Arabic-Indic 0.5": "\u0660.\u0665",
    "Devanagari 0.5": "\u0966.\u096b",
    "underscore 0.7_5": "0.7_5",
    "underscore 1_0e-1": "1_0e-1",
    "fullwidth three": "\uff13",
    "underscore 1_000": "1_000",
    "underscore 0_5": "0_5",
}


@pytest.mark.parametrize("text", list(PYTHON_ONLY.values()), ids=list(PYTHON_ONLY))
def test_a_csv_score_in_another_notation_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(f"run_id,score,fact_ids\nr1,0.5,a\nr2,{text},a\n", encoding="utf-8")
    with pytest.raises(LedgerError, match=r"row 2, field 'score'") as err:
        Ledger.read(path)
    message = str(err.value)
    assert repr(text) in message and "ASCII digits" in message
    assert "got 5.0" not in message and "got 10.0" not in message  # (0_5, 1_000 in Python)


@pytest.mark.parametrize("text", list(PYTHON_ONLY.values()), ids=list(PYTHON_ONLY))
@pytest.mark.parametrize("column", ["numbers", "words"])
def test_a_csv_covariate_in_another_notation_is_refused(
    tmp_path: Path, text: str, column: str
) -> None:
    """In a column of numbers or of words, a cell only Python reads as a number is refused,
    in the reader's block path and its row-by-row path (a blank row)."""
    other = ["0.25", "3", "1e-2"] if column == "numbers" else ["math", "code", "tip_1"]
    for blank in ("", "\n"):
        path = tmp_path / "runs.csv"
        rows = [f"r{k},0.5,a,{v}" for k, v in enumerate(other, start=1)]
        path.write_text(
            "run_id,score,fact_ids,x\n" + "\n".join(rows) + f"\n{blank}r9,0.5,a,{text}\n",
            encoding="utf-8",
        )
        row = 4 if not blank else 5
        with pytest.raises(LedgerError, match=rf"row {row}, field 'x'") as err:
            Ledger.read(path)
        assert repr(text) in str(err.value)


def test_ascii_numbers_still_read(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        "run_id,score,fact_ids,x,y,w\n"
        "r1,.5,a,+3,1e-2,caf\u00e9\n"
        "r2,1.,a,-4,5.,\u6570\u5b66\n"
        "r3,\u00a00.25\u00a0,a,0,-.5,tip_1\n",
        encoding="utf-8",
    )
    ledger = Ledger.read(path)
    assert ledger.scores.tolist() == [0.5, 1.0, 0.25]
    assert ledger.covariate("x").to_list() == [3, -4, 0]
    assert ledger.covariate("y").to_list() == [0.01, 5.0, -0.5]
    assert ledger.covariate("w").to_list() == ["caf\u00e9", "\u6570\u5b66", "tip_1"]


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("0_5", "'0_5' holds an underscore"),
        ("0.5;\uff11", "U+FF11 FULLWIDTH DIGIT ONE"),
        ("[0.7_5]", "the number '0.7_5'"),
        ("[0x1]", "the number '0x1'"),
    ],
)
def test_a_propensity_in_another_notation_is_refused(tmp_path: Path, cell: str, words: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        f'run_id,score,fact_ids,eligible_ids,propensities\nr1,0.5,a,a b,"{cell}"\n',
        encoding="utf-8",
    )
    with pytest.raises(LedgerError, match=r"row 1, field 'propensities'") as err:
        Ledger.read(path)
    assert words in str(err.value)


def test_json_lines_and_the_lesson_table_refuse_them_too(tmp_path: Path) -> None:
    for text in PYTHON_ONLY.values():
        path = tmp_path / "runs.jsonl"
        path.write_text(f'{{"run_id": "r1", "score": {text}, "fact_ids": []}}\n', encoding="utf-8")
        with pytest.raises(LedgerError, match="row 1"):
            Ledger.read(path)
        lessons = tmp_path / "lessons.csv"
        lessons.write_text(f"id,created_at\nL1,1\nL2,{text}\n", encoding="utf-8")
        with pytest.raises(LedgerError, match=r"row 2, field 'created_at'"):
            Ledger.read_lessons(lessons)


def test_the_command_line_reads_ascii_numbers_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogstats.cli import main

    path = tmp_path / "runs.csv"
    path.write_text("run_id,score,fact_ids\nr1,0.5,a\nr2,0.4,\n")
    for flags in (["--seed", "\uff11"], ["--seed", "1_0"], ["--min-trials", "\u0663"]):
        with pytest.raises(SystemExit) as exit_:
            main(["gate", str(path), "--gate", "cycgraph", *flags])
        assert exit_.value.code == 2
        assert f"invalid int value: {flags[1]!r}" in capsys.readouterr().err
    assert main(["gate", str(path), "--gate", "cycgraph", "--seed", "3"]) == 0


def test_a_sweep_constraint_reads_ascii_bounds_only() -> None:
    from cogstats._validation import ParameterError
    from cogstats.sweep.analysis import Constraint

    assert Constraint.parse("false_eviction_rate <= 2%").bound == 0.02
    for text in PYTHON_ONLY.values():
        with pytest.raises(ParameterError, match="constraint must look like"):
            Constraint.parse(f"false_eviction_rate <= {text}")


def test_ascii_parsers() -> None:
    from cogstats.ledger import ascii_float, ascii_int

    assert ascii_float(" 1e-1 ") == 0.1 and ascii_int("+7") == 7
    for text in PYTHON_ONLY.values():
        with pytest.raises(ValueError, match="ASCII"):
            ascii_float(text)
        with pytest.raises(ValueError, match="ASCII"):
            ascii_int(text)


# ---------------------------------------------------------------- ids
#: control characters: C0 (escape, line feed, tab), DEL, C1 (next line)
CONTROL_IDS = ["tip\x1b[2J", "two\nlines", "a\tb", "del\x7f", "nel\x85"]
#: accepted at the door, shown escaped: invisible, direction-changing and look-alike ids
LOOKALIKES = [
    "tip",
    "ti\u0440",  # Cyrillic er
    "t\u0456p",  # Cyrillic i
    "tip\u200d",  # zero-width joiner
    "ti\u200bp",  # zero-width space
    "\u202etip",  # right-to-left override
    "tip\u00a0",  # no-break space
    "tip ",  # a trailing space
    "\uff54\uff49\uff50",  # fullwidth
    "\U0001d42d\U0001d422\U0001d429",  # mathematical bold
    "\u0440",  # a Cyrillic er alone looks like p
    "p",
]


def _visible(text: str) -> bool:
    """Printable ASCII, line breaks between rows and a table's frame (box drawing, the
    ellipsis of a cut cell) only: nothing a terminal obeys, nothing invisible."""
    return all(
        c == "\n" or (c.isascii() and c.isprintable()) or "\u2500" <= c <= "\u257f" or c == "\u2026"
        for c in text
    )


@pytest.mark.parametrize("bad", CONTROL_IDS, ids=[repr(b) for b in CONTROL_IDS])
def test_a_control_character_in_an_id_is_refused_at_the_door(tmp_path: Path, bad: str) -> None:
    import json

    import polars as pl

    from cogstats.gates import CycgraphGate, StreamingGate

    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text(
        json.dumps({"run_id": "r1", "score": 0.5, "fact_ids": ["a"]})
        + "\n"
        + json.dumps({"run_id": "r2", "score": 0.5, "fact_ids": ["a", bad]})
        + "\n"
    )
    with pytest.raises(
        LedgerError, match=r"row 2, field 'fact_ids': fact_ids\[1\] holds a control"
    ):
        Ledger.read(jsonl)
    frame = pl.DataFrame({"run_id": ["r1", bad], "score": [0.5, 0.5], "fact_ids": [["a"], ["a"]]})
    parquet = tmp_path / "runs.parquet"
    frame.write_parquet(parquet)
    with pytest.raises(LedgerError, match=r"row 2, field 'run_id': run_id holds a control"):
        Ledger.read(parquet)
    if "\n" not in bad and "\t" not in bad:  # (a CSV cell would split these)
        csv = tmp_path / "runs.csv"
        csv.write_text(f"run_id,score,fact_ids\nr1,0.5,a;q{bad}q\n", encoding="utf-8")
        with pytest.raises(LedgerError, match=r"row 1, field 'fact_ids'"):
            Ledger.read(csv)
    with pytest.raises(LedgerError, match="holds a control character"):
        Ledger().record("r1", 0.5, [bad])
    with pytest.raises(LedgerError, match="holds a control character"):
        StreamingGate(CycgraphGate()).record(bad, 0.5, ["a"])
    lessons = tmp_path / "lessons.jsonl"
    lessons.write_text(
        json.dumps({"id": "a", "created_at": 1})
        + "\n"
        + json.dumps({"id": "b", "created_at": 2, "supersedes": [bad]})
        + "\n"
    )
    with pytest.raises(LedgerError, match=r"row 2, field 'supersedes'"):
        Ledger.read_lessons(lessons)


def test_escape_id_shows_every_lookalike_differently() -> None:
    from cogstats.ledger import escape_id

    shown = [escape_id(i) for i in LOOKALIKES]
    assert shown[0] == "tip" and shown[-1] == "p"  # plain ids as they are
    assert len(set(shown)) == len(LOOKALIKES)  # every look-alike reads differently
    assert all(_visible(s) for s in shown)  # and in characters that cannot hide
    assert escape_id("a\\x1b") != escape_id("a\x1b")  # an escape cannot be forged
    for bad in CONTROL_IDS:
        assert _visible(escape_id(bad)) and "\n" not in escape_id(bad)
    # other scripts and accents are shown as they are
    for word in ("caf\u00e9", "\u6570\u5b66", "\u0441\u043e\u0432\u0435\u0442", "na\u00efve"):
        assert escape_id(word) == word


def test_tables_and_terminals_show_ids_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    from cogstats._results import frame_text
    from cogstats.cli import main
    from cogstats.reports.display import show_table, terminal_table

    ids = CONTROL_IDS + LOOKALIKES
    frame = pl.DataFrame({"fact_id": ids, "trials": list(range(len(ids)))})
    for text in (frame_text(frame, max_rows=100), terminal_table(frame, width=60)):
        assert _visible(text)
        body = [line for line in text.splitlines() if line.startswith("│")]
        assert len(body) == 1 + len(ids)  # the header and one line per id: no split rows
    page = show_table(frame)._repr_html_()
    assert "\x1b" not in page and "\u202e" not in page and "tip\\x1b[2J" in page
    # the command line's gate table of a ledger holding the look-alikes
    runs = [
        {"run_id": f"r{k}", "score": 0.1 * (k % 10), "fact_ids": LOOKALIKES[k % 4 :: 3]}
        for k in range(40)
    ]
    path = Ledger.from_records(runs).write(tmp_path / "runs.jsonl")
    assert main(["gate", str(path), "--gate", "cycgraph", "--format", "wide"]) == 0
    out = capsys.readouterr().out
    assert _visible(out)
    for shown in ("ti\\u0440", "t\\u0456p", "tip\\u200d", "\\u202etip", "\\uff54\\uff49\\uff50"):
        assert shown in out


def test_charts_draw_escaped_ids(tmp_path: Path) -> None:
    """A control character in a chart's data used to abort the renderer (vl-convert
    panicked on NonXmlChar('\\u{1b}')); every chart builder shows ids escaped."""

    import polars as pl

    from cogstats.charts import (
        attribution_forest,
        decision_timeline,
        estimate_intervals,
        gate_decisions,
        lesson_timeline,
    )

    ids = ["tip\x1b[2J", "two\nlines", "\u202etip", "ti\u0440"]
    decisions = pl.DataFrame(
        {"after_run": [1, 2, 3, 4], "fact_id": ids, "decision": ["evict", "promote"] * 2}
    )
    estimates = pl.DataFrame(
        {
            "fact_id": ids * 2,
            "method": ["lift"] * 4 + ["ols"] * 4,
            "estimate": [0.1, -0.1, 0.0, 0.2] * 2,
            "ci_low": [0.0] * 8,
            "ci_high": [0.3] * 8,
            "decision": ["evict", "promote"] * 4,
        }
    )
    ledger = Ledger.from_records(
        [{"run_id": f"r{k}", "score": 0.5, "fact_ids": ids[2:]} for k in range(3)]
    )
    charts = [
        decision_timeline(decisions),
        gate_decisions(decisions.with_columns(pl.lit("cycgraph").alias("gate"))),
        estimate_intervals(estimates, color="method", truth=None),
        attribution_forest(estimates, lessons=ids),
        lesson_timeline(ledger, lessons=ids[2:]),
    ]

    def strings(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [s for k, v in node.items() for s in strings(k) + strings(v)]
        if isinstance(node, list):
            return [s for v in node for s in strings(v)]
        return []

    for k, chart in enumerate(charts):
        shown = strings(chart.to_dict())
        assert all(_visible(s) and "\n" not in s for s in shown), k
        assert "tip\\x1b[2J" in shown or "\\u202etip" in shown, k
        chart.save(str(tmp_path / f"chart{k}.svg"))  # vl-convert renders it
        assert (tmp_path / f"chart{k}.svg").stat().st_size > 0
