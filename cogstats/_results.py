"""Shared rendering for result objects (text summaries and notebook HTML)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import polars as pl


def format_settings(settings: Mapping[str, Any]) -> str:
    """One line ``key=value, ...`` for a settings mapping (stable key order)."""
    return ", ".join(f"{k}={v!r}" for k, v in settings.items())


#: width of command-line tables: wide enough that report cells do not wrap
CLI_TABLE_WIDTH = 320


def frame_text(frame: pl.DataFrame, *, max_rows: int = 30, width: int = 160) -> str:
    """Return a plain-text table of a polars frame, without polars' shape header.

    The table is at most ``width`` characters wide before cells wrap.
    """
    with pl.Config(
        tbl_rows=max_rows,
        tbl_cols=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        float_precision=4,
        tbl_width_chars=width,
        fmt_str_lengths=40,
    ):
        return str(frame)


def html_block(title: str, settings: Mapping[str, Any], frame: pl.DataFrame) -> str:
    """HTML for ``_repr_html_``: a heading, the settings, and the table."""
    head = f"<strong>{html.escape(title)}</strong>"
    if settings:
        head += f"<br><small>{html.escape(format_settings(settings))}</small>"
    with pl.Config(float_precision=4, tbl_rows=50):
        table = frame._repr_html_()
    return f"<div>{head}{table}</div>"
