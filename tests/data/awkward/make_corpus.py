"""Write the awkward-ledger corpus and its MANIFEST.json (run from anywhere).

    python tests/data/awkward/make_corpus.py

Each entry below is one file a user might hand to ``Ledger.read`` (odd encodings,
separators, types, duplicates, empty files, other column names) with the outcome stated
by hand: either the runs it holds (run id, score, lesson ids, and covariates where they
matter) or the error (class, row, field and words the message must contain).  The
files are committed; this script regenerates them byte for byte (the Parquet files up
to the writer's metadata).  ``tests/unit/test_ledger_awkward.py`` reads every file.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
HEADER = "run_id,score,fact_ids\n"
TWO_RUNS = [["r1", 0.9, ["L1", "L2"]], ["r2", 0.4, []]]
CSV_TWO_RUNS = HEADER + "r1,0.9,L1 L2\nr2,0.4,\n"
JSONL_TWO_RUNS = (
    '{"run_id": "r1", "score": 0.9, "fact_ids": ["L1", "L2"]}\n'
    '{"run_id": "r2", "score": 0.4, "fact_ids": []}\n'
)
DEMO_HEADER = "run,score,structural,lessons_in_prompt,recorded\n"
DEMO_ROWS = "1,0,0,,no\n2,1,1,L1 L2,yes\n3,0.9166666666666667,0.8333333333333334,L1 L2 L3,yes\n"
DEMO_RUNS = [
    ["1", 0.0, []],
    ["2", 1.0, ["L1", "L2"]],
    ["3", 0.9166666666666667, ["L1", "L2", "L3"]],
]
DEMO_MAPPING = {"run_id": "run", "fact_ids": "lessons_in_prompt"}


def ok(runs: list[list[Any]], **more: Any) -> dict[str, Any]:
    return {"outcome": "runs", "runs": runs, **more}


def error(
    kind: str, words: list[str], *, row: int | None = None, field: str | None = None
) -> dict[str, Any]:
    return {"outcome": "error", "error": kind, "row": row, "field": field, "words": words}


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


def entries() -> list[tuple[str, bytes, dict[str, Any], str, dict[str, Any]]]:
    """(file name, bytes, Ledger.read keyword arguments, what it is, expected outcome)."""
    latin1 = (HEADER + "r1,0.5,L1\nr2,0.6,café\n").encode("latin-1")
    cp1252 = (HEADER.strip() + ",note\nr1,0.5,L1,\u201cquoted\u201d\n").encode("cp1252")
    latin1_at = latin1.index(b"\xe9")
    cp1252_at = cp1252.index(b"\x93")
    junk = random.Random(20261130).randbytes(300)
    png = b"\x89PNG\r\n\x1a\n" + random.Random(1).randbytes(64)
    good_parquet = parquet_bytes(
        pl.DataFrame({"run_id": ["r1", "r2"], "score": [0.9, 0.4], "fact_ids": [["L1"], []]})
    )
    return [
        # ------------------------------------------------------------ encodings
        (
            "utf8_bom.csv",
            b"\xef\xbb\xbf" + CSV_TWO_RUNS.encode(),
            {},
            "UTF-8 with a byte-order mark (Excel's 'CSV UTF-8'): the mark is dropped",
            ok(TWO_RUNS),
        ),
        (
            "utf8_bom.jsonl",
            b"\xef\xbb\xbf" + JSONL_TWO_RUNS.encode(),
            {},
            "JSON Lines with a byte-order mark",
            ok(TWO_RUNS),
        ),
        (
            "utf8_bom.json",
            b"\xef\xbb\xbf"
            + json.dumps(
                {"runs": [{"run_id": r, "score": s, "fact_ids": f} for r, s, f in TWO_RUNS]}
            ).encode(),
            {},
            "cycgraph JSON with a byte-order mark",
            ok(TWO_RUNS),
        ),
        (
            "utf16_bom.csv",
            CSV_TWO_RUNS.encode("utf-16"),
            {},
            "UTF-16 with its byte-order mark (Excel's 'Unicode text')",
            error("LedgerError", ["UTF-16", "byte offset 0", "re-save it as UTF-8"]),
        ),
        (
            "utf16_no_bom.csv",
            CSV_TWO_RUNS.encode("utf-16-le"),
            {},
            "UTF-16 without a byte-order mark: a NUL in every other byte",
            error("LedgerError", ["NUL byte at byte offset 1", "UTF-16"]),
        ),
        (
            "latin1.csv",
            latin1,
            {},
            "latin-1 text (a lesson id with an accent)",
            error(
                "LedgerError",
                [f"byte offset {latin1_at}", "line 3", "not UTF-8", "iconv"],
            ),
        ),
        (
            "cp1252_quotes.csv",
            cp1252,
            {},
            "Windows-1252 curly quotes in a covariate",
            error("LedgerError", [f"byte offset {cp1252_at}", "line 2"]),
        ),
        (
            "binary_junk.csv",
            junk,
            {},
            "300 random bytes",
            error("LedgerError", ["byte offset"]),
        ),
        (
            "png_named_csv.csv",
            png,
            {},
            "a PNG image with a .csv name",
            error("LedgerError", ["not UTF-8", "byte offset 0"]),
        ),
        (
            "really_parquet.csv",
            good_parquet,
            {},
            "a Parquet file with a .csv name",
            error("LedgerError", ["Parquet file", "format='parquet'"]),
        ),
        (
            "not_parquet.parquet",
            CSV_TWO_RUNS.encode(),
            {},
            "CSV text with a .parquet name",
            error("LedgerError", ["cannot read it as Parquet"]),
        ),
        (
            "gzipped.csv",
            gzip.compress(CSV_TWO_RUNS.encode(), mtime=0),
            {},
            "a gzip-compressed CSV with a .csv name",
            error("LedgerError", ["gzip"]),
        ),
        # ------------------------------------------------------------ empty and blank
        ("empty.csv", b"", {}, "an empty CSV file", error("LedgerError", ["empty file"])),
        (
            "blank_lines_only.csv",
            b"\n \n\r\n",
            {},
            "only blank lines",
            error("LedgerError", ["empty file"]),
        ),
        ("empty.jsonl", b"", {}, "an empty JSON Lines file: no runs", ok([])),
        ("header_only.csv", HEADER.encode(), {}, "a header and no runs", ok([])),
        (
            "header_only_bom_crlf.csv",
            b"\xef\xbb\xbfrun_id,score,fact_ids\r\n",
            {},
            "a header with a byte-order mark and CRLF, no runs",
            ok([]),
        ),
        (
            "blank_lines.csv",
            (HEADER + "\nr1,0.9,L1 L2\n\n  \n,,\nr2,0.4,\n\n\n").encode(),
            {},
            "blank lines and a row of empty cells between and after the runs (skipped)",
            ok(TWO_RUNS),
        ),
        (
            "crlf.csv",
            CSV_TWO_RUNS.replace("\n", "\r\n").encode(),
            {},
            "Windows line ends: no id keeps a carriage return",
            ok(TWO_RUNS),
        ),
        (
            "excel_trailing_commas.csv",
            b"run_id,score,fact_ids,\r\nr1,0.9,L1 L2,\r\nr2,0.4,,\r\n,,,\r\n",
            {},
            "Excel's trailing empty column and empty row",
            ok(TWO_RUNS),
        ),
        # ------------------------------------------------------------ delimiters
        (
            "tab.tsv",
            CSV_TWO_RUNS.replace(",", "\t").encode(),
            {},
            "tab-separated, .tsv suffix",
            ok(TWO_RUNS),
        ),
        (
            "tab_named_csv.csv",
            CSV_TWO_RUNS.replace(",", "\t").encode(),
            {},
            "tab-separated with a .csv name (sniffed)",
            ok(TWO_RUNS),
        ),
        (
            "semicolon.csv",
            b"run_id;score;fact_ids\nr1;0.9;L1,L2\nr2;0.4;\n",
            {},
            "semicolon-separated (European Excel), ids comma-separated in the cell",
            ok(TWO_RUNS),
        ),
        (
            "semicolon_decimal_comma.csv",
            b"run_id;score;fact_ids\nr1;0,9;L1\n",
            {},
            "a decimal comma in a score",
            error("LedgerError", ["score must be a number", "'0,9'"], row=1, field="score"),
        ),
        (
            "pipe.csv",
            b"run_id|score|fact_ids\nr1|0.9|L1 L2\nr2|0.4|\n",
            {},
            "pipe-separated",
            ok(TWO_RUNS),
        ),
        (
            "spaces.csv",
            b"run_id score fact_ids\nr1 0.9 L1;L2\nr2 0.4 \n",
            {"delimiter": " "},
            "space-separated, read with delimiter=' '",
            ok(TWO_RUNS),
        ),
        (
            "spaces_unsniffed.csv",
            b"run_id score fact_ids\nr1 0.9 L1;L2\n",
            {},
            "space-separated without delimiter=: the sniffer does not guess spaces",
            error("LedgerError", ["cannot tell the delimiter", "pass delimiter="]),
        ),
        (
            "ambiguous_delimiter.csv",
            b"run_id;score;fact_ids,extra\nr1;0.9;L1,x\n",
            {},
            "a header holding both ';' and ','",
            error("LedgerError", ["cannot tell the delimiter", "',' and ';'", "delimiter="]),
        ),
        (
            "quoted_fields.csv",
            (
                b'run_id,score,fact_ids,note\nr1,0.9,"L1, L2","said ""hi"", twice"\n'
                b'r2,0.4,,"two\nlines"\n'
            ),
            {},
            "quoted cells holding commas, doubled quotes and a line break",
            ok(TWO_RUNS, covariates={"note": ['said "hi", twice', "two\nlines"]}),
        ),
        (
            "unquoted_comma_list.csv",
            (HEADER + "r1,0.9,L1\nr2,0.4,L1, L2\n").encode(),
            {},
            "an unquoted comma-separated id list in a comma-separated file",
            error("LedgerError", ["has 4 fields; the header has 3", "must be quoted"], row=2),
        ),
        (
            "unclosed_quote.csv",
            (HEADER + 'r1,0.9,"L1 L2\nr2,0.4,\n').encode(),
            {},
            "a quote that is never closed",
            error("LedgerError", ["malformed CSV", "unexpected end of data"], row=1),
        ),
        # ------------------------------------------------------------ types and values
        (
            "string_score.jsonl",
            b'{"run_id": "r1", "score": 0.5}\n{"run_id": "r2", "score": "0.5"}\n',
            {},
            "a score written as a string in JSON",
            error("LedgerError", ["score must be a number", "'0.5'"], row=2, field="score"),
        ),
        (
            "int_run_id.jsonl",
            b'{"run_id": 7, "score": 0.5, "fact_ids": []}\n',
            {},
            "an integer run id in JSON",
            error("LedgerError", ['write "7", not 7'], row=1, field="run_id"),
        ),
        (
            "string_fact_ids.jsonl",
            b'{"run_id": "r1", "score": 0.5, "fact_ids": "L1 L2"}\n',
            {},
            "fact_ids as one string in JSON",
            error("LedgerError", ["must be a list", "only CSV cells"], row=1, field="fact_ids"),
        ),
        (
            "bool_score.jsonl",
            b'{"run_id": "r1", "score": true}\n',
            {},
            "a boolean score",
            error("LedgerError", ["score must be a number", "True"], row=1, field="score"),
        ),
        (
            "null_score.jsonl",
            b'{"run_id": "r1", "score": 0.5}\n\n{"run_id": "r2", "score": null}\n',
            {},
            "a null score (line 3, after a blank line)",
            error("LedgerError", ["score must be a number", "None"], row=3, field="score"),
        ),
        (
            "nulls.jsonl",
            b'{"run_id": "r1", "score": 0.9, "fact_ids": ["L1", "L2"], "d": null}\n'
            b'{"run_id": "r2", "score": 0.4, "fact_ids": null, "d": 1.5}\n',
            {},
            "null fact_ids (no lessons) and a null covariate",
            ok(TWO_RUNS, covariates={"d": [None, 1.5]}),
        ),
        (
            "nan_score.csv",
            (HEADER + "r1,0.9,L1\nr2,nan,L2\n").encode(),
            {},
            "a NaN score",
            error("LedgerError", ["finite"], row=2, field="score"),
        ),
        (
            "inf_score.jsonl",
            b'{"run_id": "r1", "score": Infinity}\n',
            {},
            "an infinite score (JSON's Infinity)",
            error("LedgerError", ["finite"], row=1, field="score"),
        ),
        (
            "empty_score.csv",
            (HEADER + "r1,,L1\n").encode(),
            {},
            "an empty score cell",
            error("LedgerError", ["got empty"], row=1, field="score"),
        ),
        (
            "score_out_of_range.csv",
            (HEADER + "r1,0.5,L1\nr2,87,L2\n").encode(),
            {},
            "a score on a 0-100 scale",
            error("LedgerError", ["[0, 1]", "87.0"], row=2, field="score"),
        ),
        (
            "covariate_types.csv",
            b"run_id,score,fact_ids,flag,count,difficulty,family\n"
            b"r1,0.9,L1 L2,TRUE,3,0.25,easy\nr2,0.4,,false,,-1e-3,hard\n",
            {},
            "boolean, integer (with a gap), float and string covariates",
            ok(
                TWO_RUNS,
                covariates={
                    "flag": [True, False],
                    "count": [3, None],
                    "difficulty": [0.25, -0.001],
                    "family": ["easy", "hard"],
                },
            ),
        ),
        (
            "integer_run_ids.csv",
            b"run_id,score,fact_ids\n1,0.9,L1 L2\n02,0.4,\n",
            {},
            "integer run ids in CSV: read as strings, as written",
            ok([["1", 0.9, ["L1", "L2"]], ["02", 0.4, []]]),
        ),
        # ------------------------------------------------------------ duplicates
        (
            "duplicate_run_ids.csv",
            (HEADER + "r1,0.9,L1\nr2,0.4,\nr1,0.5,L2\n").encode(),
            {},
            "a run id twice",
            error(
                "LedgerError", ["duplicate run_id 'r1'", "first at row 1"], row=3, field="run_id"
            ),
        ),
        (
            "duplicate_lesson_in_run.csv",
            (HEADER + "r1,0.9,L1 L2 L1\nr2,0.4,\n").encode(),
            {},
            "a lesson listed twice in one run: counts once, stored as written, warned",
            ok(
                [["r1", 0.9, ["L1", "L2", "L1"]], ["r2", 0.4, []]],
                trials={"L1": 1, "L2": 1},
                warns={"row": 1, "field": "fact_ids", "words": ["'L1' 2 times", "counts once"]},
            ),
        ),
        (
            "semicolon_ids_with_spaces.csv",
            (HEADER + "r1,0.9,tip 1;tip 2\nr2,0.4,tip 3\nr3,0.5,tip 4;\n").encode(),
            {},
            "ids with spaces joined by ';': a cell with one id and no ';' splits on whitespace "
            "(the rule table), warned; a trailing ';' keeps it whole",
            ok(
                [
                    ["r1", 0.9, ["tip 1", "tip 2"]],
                    ["r2", 0.4, ["tip", "3"]],
                    ["r3", 0.5, ["tip 4"]],
                ],
                warns={
                    "row": 2,
                    "field": "fact_ids",
                    "words": ["split on ';' (first at row 1)", "end the cell with ';'"],
                },
            ),
        ),
        (
            "duplicate_key.jsonl",
            b'{"run_id": "r1", "score": 0.9, "score": 0.4}\n',
            {},
            "a key twice in one JSON object",
            error("LedgerError", ["appears twice"], row=1, field="score"),
        ),
        (
            "duplicate_column.csv",
            b"run_id,score,fact_ids,score\nr1,0.9,L1,0.4\n",
            {},
            "a column twice in the header",
            error("LedgerError", ["duplicate column", "'score'"]),
        ),
        # ------------------------------------------------------------ list cells
        (
            "pandas_lists.csv",
            b"run_id,score,fact_ids\nr1,0.9,\"['L1', 'L2']\"\nr2,0.4,[]\n",
            {},
            "list cells as pandas writes them (Python literals)",
            ok(TWO_RUNS),
        ),
        (
            "json_lists.csv",
            'run_id,score,fact_ids\nr1,0.9,"[""L1 with space"", ""L2;semi"", ""é""]"\n'.encode(),
            {},
            "JSON list cells holding spaces, a semicolon and an accent",
            ok([["r1", 0.9, ["L1 with space", "L2;semi", "é"]]]),
        ),
        (
            "numpy_array_cells.csv",
            b"run_id,score,fact_ids\nr1,0.9,['L1' 'L2']\n",
            {},
            "numpy's array print (no commas): Python would join the strings",
            error("LedgerError", ["no comma"], row=1, field="fact_ids"),
        ),
        (
            "non_string_list.csv",
            b'run_id,score,fact_ids\nr1,0.9,"[1, 2]"\n',
            {},
            "a list of numbers as lesson ids",
            error(
                "LedgerError", ["fact_ids[0] must be a string lesson id"], row=1, field="fact_ids"
            ),
        ),
        (
            "bad_bracket_cell.csv",
            b"run_id,score,fact_ids\nr1,0.9,[L1 L2]\n",
            {},
            "brackets around unquoted ids",
            error("LedgerError", ["neither a JSON list nor a Python"], row=1, field="fact_ids"),
        ),
        (
            "id_whitespace.csv",
            b'run_id,score,fact_ids\nr1,0.9," L1 ; L2 ;"\nr2,0.4,"  "\nr3,0.5," L3 "\n',
            {},
            "spaces around ids and an empty piece: stripped and dropped",
            ok([["r1", 0.9, ["L1", "L2"]], ["r2", 0.4, []], ["r3", 0.5, ["L3"]]]),
        ),
        (
            "propensity_cells.csv",
            b"run_id,score,fact_ids,eligible_ids,propensities\n"
            b'r1,0.9,L1,"[""L1"", ""L2""]",0.5;0.25\n'
            b"r2,0.4,,L1 L2,0.5 0.25\nr3,0.5,,,\n",
            {},
            "logged propensities in two list forms, and a run without them (null)",
            ok(
                [["r1", 0.9, ["L1"]], ["r2", 0.4, []], ["r3", 0.5, []]],
                covariates={
                    "eligible_ids": [["L1", "L2"], ["L1", "L2"], None],
                    "propensities": [[0.5, 0.25], [0.5, 0.25], None],
                },
            ),
        ),
        # ------------------------------------------------------------ Unicode
        (
            "nfc_nfd.jsonl",
            (
                '{"run_id": "r1", "score": 0.9, "fact_ids": ["caf\u00e9"]}\n'
                '{"run_id": "r2", "score": 0.4, "fact_ids": ["cafe\u0301"]}\n'
            ).encode(),
            {},
            "one lesson id precomposed (NFC) and decomposed (NFD), raw UTF-8: one lesson",
            ok([["r1", 0.9, ["caf\u00e9"]], ["r2", 0.4, ["caf\u00e9"]]], trials={"caf\u00e9": 2}),
        ),
        # ------------------------------------------------------------ columns
        (
            "cycgraph_columns.csv",
            (DEMO_HEADER + DEMO_ROWS).encode(),
            {},
            "cycgraph's demo column names, no mapping: the error says how to map them",
            error(
                "LedgerError",
                [
                    "missing required columns ['run_id', 'fact_ids']",
                    "'run', 'score', 'structural'",
                    'columns={"run_id": "run", "fact_ids": "lessons_in_prompt"}',
                    "--column run_id=run --column fact_ids=lessons_in_prompt",
                ],
                field="run_id",
            ),
        ),
        (
            "cycgraph_columns_mapped.csv",
            (DEMO_HEADER + DEMO_ROWS).encode(),
            {"columns": DEMO_MAPPING},
            "cycgraph's demo column names with the mapping; run ids stay strings",
            ok(
                DEMO_RUNS,
                covariates={
                    "structural": [0.0, 1.0, 0.8333333333333334],
                    "recorded": ["no", "yes", "yes"],
                },
            ),
        ),
        (
            "mapping_to_absent_column.csv",
            (DEMO_HEADER + DEMO_ROWS).encode(),
            {"columns": {"run_id": "run_number", "fact_ids": "lessons_in_prompt"}},
            "a mapping naming a column the file lacks",
            error("ParameterError", ["has no column 'run_number'", "'run', 'score'"]),
        ),
        (
            "mapping_onto_existing_column.csv",
            b"run,run_id,score,fact_ids\n1,a,0.5,L1\n",
            {"columns": {"run_id": "run"}},
            "a mapping onto a name the file already uses",
            error("ParameterError", ["also has a column named 'run_id'"]),
        ),
        (
            "extra_columns.jsonl",
            b'{"run_id": "r1", "score": 0.9, "fact_ids": ["L1", "L2"], "model": "m1", '
            b'"tokens": 812}\n'
            b'{"run_id": "r2", "score": 0.4, "fact_ids": [], "model": "m2", "tokens": 640}\n',
            {},
            "extra keys become covariates",
            ok(TWO_RUNS, covariates={"model": ["m1", "m2"], "tokens": [812, 640]}),
        ),
        (
            "mapped_keys.jsonl",
            b'{"id": "r1", "reward": 0.9, "lessons": ["L1", "L2"]}\n'
            b'{"id": "r2", "reward": 0.4, "lessons": []}\n',
            {"columns": {"run_id": "id", "score": "reward", "fact_ids": "lessons"}},
            "JSON keys mapped",
            ok(TWO_RUNS),
        ),
        (
            "missing_key.jsonl",
            b'{"run_id": "r1", "score": 0.9}\n{"run_id": "r2", "reward": 0.4}\n',
            {},
            "a record without a score, but with a 'reward'",
            error(
                "LedgerError",
                ["missing required field", "--column score=reward"],
                row=2,
                field="score",
            ),
        ),
        (
            "malformed.jsonl",
            b'{"run_id": "r1", "score": 0.9}\n{"run_id": "r2", "score": 0.4\n',
            {},
            "a line that is not JSON",
            error("LedgerError", ["malformed JSON"], row=2),
        ),
        (
            "not_a_list.json",
            b"42",
            {},
            "cycgraph JSON that holds no runs",
            error("LedgerError", ["list of RunOutcome records"]),
        ),
        (
            "int_run_ids.parquet",
            parquet_bytes(
                pl.DataFrame({"run_id": [1, 2], "score": [0.9, 0.4], "fact_ids": [["L1"], []]})
            ),
            {},
            "Parquet with integer run ids (typed, so strict)",
            error("LedgerError", ['write "1", not 1'], row=1, field="run_id"),
        ),
        (
            "mapped.parquet",
            parquet_bytes(
                pl.DataFrame(
                    {"run": ["r1", "r2"], "score": [0.9, 0.4], "lessons": [["L1", "L2"], []]}
                )
            ),
            {"columns": {"run_id": "run", "fact_ids": "lessons"}},
            "Parquet with its own column names, mapped",
            ok(TWO_RUNS),
        ),
    ]


def main() -> None:
    manifest = []
    seen = set()
    for name, data, read, what, expected in entries():
        assert name not in seen, name
        seen.add(name)
        (HERE / name).write_bytes(data)
        manifest.append({"file": name, "what": what, "read": read, **expected})
    keep = {"MANIFEST.json", "make_corpus.py"} | seen
    stale = [p.name for p in HERE.iterdir() if p.is_file() and p.name not in keep]
    for name in stale:
        (HERE / name).unlink()
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=True) + "\n")
    print(f"wrote {len(manifest)} files and MANIFEST.json to {HERE}")


if __name__ == "__main__":
    main()
