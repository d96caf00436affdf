r"""A lesson store as text: ``cogstats store show STATE [--events]``, in 80 columns.

Lesson and run ids come from agents: they are shown through the ledger's
:func:`cogstats.ledger.escape_id` (invisible, direction-changing and look-alike characters
as ``\uXXXX``), so that an id can neither reorder nor hide what a terminal shows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cogstats.ledger import escape_id

__all__ = ["render"]


def _cell(value: Any, width: int, *, right: bool = False) -> str:
    """Return a cell of exactly ``width`` columns (cut with ``~`` when too long)."""
    text = "-" if value is None else str(value)
    if len(text) > width:
        text = text[: width - 1] + "~"
    return text.rjust(width) if right else text.ljust(width)


def _t(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(store: Any, *, events: bool = False, width: int = 80) -> str:
    r"""Return the store's lessons (or its status events) as text ``width`` columns wide.

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.store import LessonStore
    >>> with LessonStore.open(tempfile.mkdtemp(), preset="recommended") as s:
    ...     _ = s.add("a‮b")
    ...     text = render(s)
    >>> "a\\u202eb" in text and max(len(line) for line in text.splitlines()) <= 80
    True
    """
    lessons = store.lessons()
    settings = store.settings
    what = f"preset {settings.preset}" if settings.preset else f"gate {settings.gate['name']}"
    head = [
        _cell(f"lesson store {store.path}", width).rstrip(),
        _cell(f"{store.runs} runs, {lessons.height} lessons, {what}", width).rstrip(),
    ]
    counts = Counter(lessons["status"].to_list())
    if counts:
        head.append(
            _cell(
                "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), width
            ).rstrip()
        )
    if events:
        return "\n".join([*head, "", *_events(store, width)]) + "\n"
    fid = 24
    rest = width - fid - 10 - 6 - 7 - 7 - 5
    lines = [
        " ".join(
            [
                _cell("lesson", fid),
                _cell("status", 10),
                _cell("since", 6, right=True),
                _cell("trials", 7, right=True),
                _cell("t", 7, right=True),
                _cell("why", rest),
            ]
        ).rstrip()
    ]
    for row in lessons.iter_rows(named=True):
        why = row["why"] or ""
        if row["reason"]:
            why = f"{row['reason']}: {why}" if why else row["reason"]
        lines.append(
            " ".join(
                [
                    _cell(escape_id(row["fact_id"]), fid),
                    _cell(row["status"], 10),
                    _cell(row["since"], 6, right=True),
                    _cell(row["trials"], 7, right=True),
                    _cell(_t(row["t"]), 7, right=True),
                    _cell(why, rest),
                ]
            ).rstrip()
        )
    return "\n".join([*head, "", *lines]) + "\n"


def _events(store: Any, width: int) -> list[str]:
    fid, rid = 18, 10
    rest = width - 6 - rid - fid - 22 - 4
    lines = [
        " ".join(
            [
                _cell("run", 6, right=True),
                _cell("run_id", rid),
                _cell("lesson", fid),
                _cell("from -> to", 22),
                _cell("why", rest),
            ]
        ).rstrip()
    ]
    for e in store.events().iter_rows(named=True):
        move = f"{e['from']} -> {e['to']}"
        why = e["why"] or ""
        if e["reason"]:
            why = f"{e['reason']}: {why}"
        lines.append(
            " ".join(
                [
                    _cell(e["run"], 6, right=True),
                    _cell(escape_id(e["run_id"]), rid),
                    _cell(escape_id(e["fact_id"]), fid),
                    _cell(move, 22),
                    _cell(why, rest),
                ]
            ).rstrip()
        )
    if len(lines) == 1:
        lines.append("(no status events yet)")
    return lines
