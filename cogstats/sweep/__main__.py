"""``python -m cogstats.sweep check STORE --metric NAME --max X``: the sweep check without the CLI.

The same as ``cogstats sweep check`` (:func:`cogstats.sweep.check.check_main`).
"""

from __future__ import annotations

import sys

from cogstats.sweep.check import check_main


def main(argv: list[str] | None = None) -> int:
    """Run ``check`` (the only subcommand here); 2 with a usage line otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "check":
        print(
            "usage: python -m cogstats.sweep check STORE --metric NAME (--max X | --min X) "
            "[--mcse K] [--allow-missing]",
            file=sys.stderr,
        )
        return 2
    return check_main(argv[1:], prog="python -m cogstats.sweep check")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
