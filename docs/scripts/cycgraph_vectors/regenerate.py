"""Regenerate ``tests/data/cycgraph_gate_vectors.json`` from cycgraph's own code.

Usage (steps and the protocol: ``docs/scripts/cycgraph_vectors/README.md``)::

    python docs/scripts/cycgraph_vectors/regenerate.py --cycgraph PATH [--out FILE]
    python docs/scripts/cycgraph_vectors/regenerate.py --backend "CMD ..." [--out FILE]

The committed vectors file is the source of truth for *which* cases exist: this driver
reads it, keeps every input as it is, strips the recorded outputs (``expected``,
``expected_reject``, ``expected_ids_in_order`` and ``policy_defaults``' values), sends the
inputs to a backend as one JSON request document, reads one JSON response document back,
and writes the outputs into the same places, in the same layout and formatting (JSON
indented by one space, keys in the file's order, infinity written ``1e309``, no final
newline).  Regenerating from the same cycgraph commit therefore gives the same bytes.

With ``--cycgraph PATH`` the backend is ``node harness.mjs --cycgraph PATH``, which imports
the built ``@cycgraph/memory`` package of that checkout and calls its exported functions;
the ``source`` line then records the package's version (``packages/memory/package.json``)
and the checkout's commit (``git rev-parse --short=7 HEAD``).  With ``--backend CMD`` any
program that answers the protocol can stand in (the tests use one written with cogstats);
the ``source`` line is kept unless ``--version`` and ``--commit`` are both given.

Only the standard library is used, so the driver runs without cogstats installed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

PROTOCOL = "cogstats-cycgraph-vectors/1"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEFAULT_VECTORS = ROOT / "tests" / "data" / "cycgraph_gate_vectors.json"
HARNESS = HERE / "harness.mjs"

SOURCE = (
    "Recorded by running the gate, retriever and statistics modules of wmcmahan/cycgraph "
    "(package @cycgraph/memory {version}, commit {commit}) on these inputs."
)

#: Each section of cases and the key that holds a case's recorded output.
OUTPUT_KEYS = {
    "gate_cases": "expected",
    "welch_cases": "expected",
    "t_cdf_cases": "expected",
    "bh_cases": "expected_reject",
    "required_trials_cases": "expected",
    "retrieval_cases": "expected_ids_in_order",
}
#: The fields of a gate decision's evidence, in the file's order (``alpha_bracket`` only
#: under doubling sequential control).
EVIDENCE_KEYS = ("lift", "se", "df", "p_promote", "p_evict", "trials", "baseline_runs")
EVIDENCE_INTS = ("trials", "baseline_runs", "alpha_bracket")
WELCH_KEYS = ("lift", "se", "df", "p_exceeds")

_NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
_POS_INF = "__cycgraph_vectors_positive_infinity__"
_NEG_INF = "__cycgraph_vectors_negative_infinity__"


class ProtocolError(ValueError):
    """The backend's response does not answer the request as the protocol says."""


# --------------------------------------------------------------------------- request


def build_request(vectors: dict[str, Any]) -> dict[str, Any]:
    """Build the request document: every case's inputs, without any recorded output.

    Parameters
    ----------
    vectors : dict
        The parsed vectors file.

    Returns
    -------
    dict
        ``protocol``, ``policy_defaults`` (the policy field names wanted),
        ``gate_cases``, ``welch_cases``, ``t_cdf_cases``, ``bh_cases``,
        ``required_trials_cases`` (each a list of input objects) and ``retrieval``
        (``store``, ``ledger`` and ``cases``).
    """
    request: dict[str, Any] = {
        "protocol": PROTOCOL,
        "policy_defaults": list(vectors["policy_defaults"]),
    }
    for section, output in OUTPUT_KEYS.items():
        cases = [{k: v for k, v in case.items() if k != output} for case in vectors[section]]
        if section == "retrieval_cases":
            request["retrieval"] = {
                "store": vectors["retrieval_store"],
                "ledger": vectors["retrieval_ledger"],
                "cases": cases,
            }
        else:
            request[section] = cases
    return request


# --------------------------------------------------------------------------- response


def _number(value: Any, where: str) -> int | float:
    """Read a number of the response as JavaScript would print it.

    ``"Infinity"``/``"-Infinity"`` stand for the non-finite values JSON cannot carry;
    a float with an integral value below 1e21 becomes an int (JavaScript prints ``8``,
    not ``8.0``), so a backend written in another language formats like cycgraph.
    """
    if isinstance(value, str) and value in _NON_FINITE:
        value = _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, float):
        if math.isnan(value):
            raise ProtocolError(f"{where}: NaN cannot be recorded")
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return int(value)
    return value


def _integer(value: Any, where: str) -> int:
    number = _number(value, where)
    if not isinstance(number, int):
        raise ProtocolError(f"{where}: expected an integer, got {value!r}")
    return number


def _list(value: Any, length: int | None, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ProtocolError(f"{where}: {len(value)} answers for {length} cases")
    return value


def _evidence(raw: Any, where: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}: evidence must be an object")
    extra = set(raw) - set(EVIDENCE_KEYS) - {"alpha_bracket"}
    missing = set(EVIDENCE_KEYS) - set(raw)
    if extra or missing:
        raise ProtocolError(
            f"{where}: evidence fields differ from the file's layout "
            f"(unexpected {sorted(extra)}, missing {sorted(missing)}); "
            "cycgraph's RetentionEvidence changed: update the driver and the reference test"
        )
    out: dict[str, Any] = {}
    for key in (*EVIDENCE_KEYS, "alpha_bracket"):
        if key in raw:
            convert = _integer if key in EVIDENCE_INTS else _number
            out[key] = convert(raw[key], f"{where}.{key}")
    return out


def gate_entries(candidates: list[str], report: Any, where: str) -> list[dict[str, Any]]:
    """Lay a RetentionReport out as the file does: one entry per candidate, in order.

    Parameters
    ----------
    candidates : list of str
        The case's candidate lessons, in store order.
    report : dict
        ``promoted`` (``fact_id``, ``evidence``?), ``evicted`` (``fact_id``, ``reason``,
        ``evidence``?) and ``held`` (``fact_id``, ``trials``, ``evidence``?).
    where : str
        Where the report sits in the response, for error messages.

    Returns
    -------
    list of dict
        ``fact_id``, ``decision`` (promote / evict / hold), ``reason`` (null unless
        evicted), ``trials`` (held lessons only) and ``evidence`` (null when absent).
    """
    if not isinstance(report, dict) or set(report) != {"promoted", "evicted", "held"}:
        raise ProtocolError(f"{where}: expected an object with promoted, evicted, held")
    found: dict[str, dict[str, Any]] = {}
    for group, decision in (("promoted", "promote"), ("evicted", "evict"), ("held", "hold")):
        for i, item in enumerate(_list(report[group], None, f"{where}.{group}")):
            here = f"{where}.{group}[{i}]"
            fact_id = item.get("fact_id") if isinstance(item, dict) else None
            if not isinstance(fact_id, str):
                raise ProtocolError(f"{here}: no fact_id")
            if fact_id in found:
                raise ProtocolError(f"{here}: {fact_id} decided twice")
            entry: dict[str, Any] = {"fact_id": fact_id, "decision": decision, "reason": None}
            if decision == "evict":
                entry["reason"] = item.get("reason")
                if not isinstance(entry["reason"], str):
                    raise ProtocolError(f"{here}: an eviction needs a reason")
            if decision == "hold":
                entry["trials"] = _integer(item.get("trials"), f"{here}.trials")
            entry["evidence"] = _evidence(item.get("evidence"), f"{here}.evidence")
            found[fact_id] = entry
    if set(found) != set(candidates):
        raise ProtocolError(
            f"{where}: decisions for {sorted(found)}, candidates {sorted(candidates)}"
        )
    return [found[c] for c in candidates]


def _outputs(section: str, case: dict[str, Any], answer: Any, where: str) -> Any:
    if section == "gate_cases":
        return gate_entries(case["candidates"], answer, where)
    if section == "welch_cases":
        if not isinstance(answer, dict) or set(answer) != set(WELCH_KEYS):
            raise ProtocolError(f"{where}: expected an object with {', '.join(WELCH_KEYS)}")
        return {k: _number(answer[k], f"{where}.{k}") for k in WELCH_KEYS}
    if section == "t_cdf_cases":
        return _number(answer, where)
    if section == "bh_cases":
        mask = _list(answer, len(case["pvalues"]), where)
        if not all(isinstance(b, bool) for b in mask):
            raise ProtocolError(f"{where}: expected booleans")
        return mask
    if section == "required_trials_cases":
        return _integer(answer, where)
    ids = _list(answer, None, where)
    if not all(isinstance(i, str) for i in ids):
        raise ProtocolError(f"{where}: expected lesson ids")
    return ids


def merge(
    vectors: dict[str, Any], response: dict[str, Any], source: str | None = None
) -> dict[str, Any]:
    """Put the response's outputs in place of the recorded ones, in a new document.

    Parameters
    ----------
    vectors : dict
        The parsed vectors file (its inputs are kept exactly).
    response : dict
        The backend's response document.
    source : str, optional
        A new ``source`` line; the file's own is kept when None.

    Returns
    -------
    dict
        A new document in the file's key order; a case that had no output yet gets it
        as its last key.
    """
    if not isinstance(response, dict) or response.get("protocol") != PROTOCOL:
        raise ProtocolError(f"the response is not a {PROTOCOL} document")
    out: dict[str, Any] = {}
    for key, value in vectors.items():
        if key == "source":
            out[key] = value if source is None else source
        elif key == "policy_defaults":
            defaults = response.get("policy_defaults")
            if not isinstance(defaults, dict):
                raise ProtocolError("policy_defaults: expected an object")
            out[key] = {name: _default(defaults.get(name), name) for name in value}
        elif key in OUTPUT_KEYS:
            output = OUTPUT_KEYS[key]
            answers = _list(response.get(key), len(value), key)
            out[key] = [
                _put(case, output, _outputs(key, case, answers[i], f"{key}[{i}]"))
                for i, case in enumerate(value)
            ]
        else:
            out[key] = value
    return out


def _default(value: Any, name: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value  # null: an optional field without a default (JSON drops undefined)
    return _number(value, f"policy_defaults.{name}")


def _put(case: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    new = dict(case)
    new[key] = value  # in place when present, else appended last
    return new


# --------------------------------------------------------------------------- writing


def dumps(vectors: dict[str, Any]) -> str:
    """Write the file's text: one-space indent, ASCII, infinity ``1e309``, no final newline.

    ``1e309`` overflows to infinity when read, in Python and in JavaScript, where the
    ``Infinity`` token of Python's json module is not JSON.
    """

    def walk(value: Any) -> Any:
        if isinstance(value, float) and math.isinf(value):
            return _POS_INF if value > 0 else _NEG_INF
        if isinstance(value, float) and math.isnan(value):
            raise ValueError("NaN cannot be written to the vectors file")
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    text = json.dumps(walk(vectors), indent=1, allow_nan=False)
    return text.replace(f'"{_POS_INF}"', "1e309").replace(f'"{_NEG_INF}"', "-1e309")


# --------------------------------------------------------------------------- backend


def run_backend(command: list[str], request: dict[str, Any]) -> dict[str, Any]:
    """Send the request on the backend's standard input; read its response from stdout."""
    done = subprocess.run(
        command, input=json.dumps(request), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"backend {shlex.join(command)} failed (exit {done.returncode}):\n{done.stderr}"
        )
    try:
        response = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"backend {shlex.join(command)} did not print JSON: {exc}") from exc
    if not isinstance(response, dict):
        raise SystemExit(f"backend {shlex.join(command)} printed no JSON object")
    return response


def checkout_identity(checkout: Path) -> tuple[str | None, str | None]:
    """Find a cycgraph checkout's package version and short commit (None if unknown)."""
    version = None
    package = checkout / "packages" / "memory" / "package.json"
    if package.is_file():
        version = json.loads(package.read_text()).get("version")
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short=7", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    commit = done.stdout.strip() if done.returncode == 0 else None
    return version, commit


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Regenerate cycgraph_gate_vectors.json by running cycgraph's code."
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--cycgraph", type=Path, help="a built checkout of wmcmahan/cycgraph")
    which.add_argument("--backend", help="a command answering the protocol (stdin -> stdout)")
    parser.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS, help="inputs")
    parser.add_argument("--out", type=Path, help="where to write (default: --vectors)")
    parser.add_argument("--node", default="node", help="the Node.js executable")
    parser.add_argument("--version", dest="pkg_version", help="package version for source")
    parser.add_argument("--commit", help="cycgraph commit for the source line")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file would change"
    )
    parser.add_argument("--request-out", type=Path, help="also save the request document")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the driver; the exit status is 1 when ``--check`` finds a difference."""
    args = _parser().parse_args(argv)
    raw = args.vectors.read_text()
    vectors = json.loads(raw)
    request = build_request(vectors)
    if args.request_out is not None:
        args.request_out.write_text(json.dumps(request, indent=1) + "\n")

    version, commit = args.pkg_version, args.commit
    if args.cycgraph is not None:
        if not (args.cycgraph / "packages" / "memory" / "package.json").is_file():
            raise SystemExit(f"{args.cycgraph}: not a checkout of cycgraph (no packages/memory)")
        command = [args.node, str(HARNESS), "--cycgraph", str(args.cycgraph.resolve())]
        found_version, found_commit = checkout_identity(args.cycgraph)
        version = version or found_version
        commit = commit or found_commit
        if version is None or commit is None:
            raise SystemExit(
                f"{args.cycgraph}: cannot tell the package version or commit "
                "(not a git checkout?); pass --version and --commit"
            )
    else:
        command = shlex.split(args.backend)
        if (version is None) != (commit is None):
            raise SystemExit("--version and --commit go together")
    source = None if version is None else SOURCE.format(version=version, commit=commit)

    response = run_backend(command, request)
    try:
        text = dumps(merge(vectors, response, source))
    except ProtocolError as exc:
        raise SystemExit(f"backend {shlex.join(command)}: {exc}") from exc

    out = args.out or args.vectors
    if args.check:
        current = out.read_text() if out.exists() else ""
        if current == text:
            print(f"{out}: unchanged")
            return 0
        print(f"{out}: would change ({_first_difference(current, text)})")
        return 1
    out.write_text(text)
    print(f"wrote {out}" + ("" if source is None else f" ({_short(source)})"))
    return 0


def _short(source: str) -> str:
    match = re.search(r"\(package (.+?)\)", source)
    return match.group(1) if match else source


def _first_difference(old: str, new: str) -> str:
    for line, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=False), 1):
        if a != b:
            return f"line {line}: {a.strip()!r} -> {b.strip()!r}"
    return "length differs"


if __name__ == "__main__":
    sys.exit(main())
