"""One progress bar for the long loops (simulation replicates, sweep cells)."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(
    progress: bool | None,
    *,
    total: int,
    unit: str,
    desc: str,
    large: bool = True,
    initial: int = 0,
    leave: bool = False,
) -> Any:
    """Return a tqdm bar, or None when there is nothing to show.

    ``progress=None`` shows one when stderr is a terminal and the work is ``large``
    (the caller's judgement); True and False force it on or off.  tqdm (the ``sim``
    extra) is imported only when a bar is shown.
    """
    if progress is None:
        progress = sys.stderr.isatty() and large
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit=unit, desc=desc, leave=leave, dynamic_ncols=True)
