"""Where the files the reports read live: in a checkout, or installed with the package.

The report notebooks (``notebooks/``), the scenario and sweep specs (``simulations/``)
and the bundled ledgers (``data/``) sit at the top of a repository checkout.  A wheel
installs the same three folders under ``<prefix>/share/cogstats/`` (setuptools
``data-files``, see ``pyproject.toml``), so ``cogstats report NAME`` also works after
``pip install cogstats`` outside any checkout.  :func:`resource_root` finds whichever is
there (the checkout first) and :func:`resource_path` resolves a relative path such as
``"simulations/poison_crater.toml"`` against the working directory first, then against
that root; report notebooks call it on every path parameter.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from pathlib import Path

from cogstats._validation import ParameterError

__all__ = ["RESOURCE_FOLDERS", "resource_path", "resource_root"]

#: The folders a report may read, relative to the resource root.
RESOURCE_FOLDERS: tuple[str, ...] = ("notebooks", "simulations", "data")
_CHECKOUT = Path(__file__).resolve().parents[2]


def _candidates() -> list[Path]:
    roots = [_CHECKOUT]
    prefixes = [sys.prefix, sysconfig.get_path("data"), getattr(site, "USER_BASE", None)]
    for prefix in prefixes:
        if prefix:
            roots.append(Path(prefix) / "share" / "cogstats")
    return roots


def resource_root() -> Path:
    """Return the folder holding ``notebooks/``, ``simulations/`` and ``data/``.

    The repository checkout that this ``cogstats`` was imported from when it has those
    folders (a clone, an editable install), else ``<prefix>/share/cogstats`` of the
    environment the package is installed in.

    Raises
    ------
    FileNotFoundError
        When neither is there (the message lists the places looked at).

    Examples
    --------
    >>> (resource_root() / "simulations" / "poison_crater.toml").is_file()
    True
    """
    looked = _candidates()
    for root in looked:
        if all((root / name).is_dir() for name in RESOURCE_FOLDERS):
            return root
    raise FileNotFoundError(
        "cogstats' report resources (notebooks/, simulations/, data/) were not found in "
        f"{[str(p) for p in looked]}; reinstall cogstats from a wheel or run from a checkout"
    )


def resource_path(path: str | Path, *, must_exist: bool = True) -> Path:
    """Resolve a report's file parameter: as given, else against :func:`resource_root`.

    An absolute path is taken as is; a relative one is looked up in the working
    directory first (where ``cogstats report`` runs the notebook), then under the
    resource root, so ``"simulations/poison_crater.toml"`` works from anywhere.

    Parameters
    ----------
    path : str or Path
        The file (``~`` is expanded).
    must_exist : bool
        Raise when the file is in neither place (default); otherwise return the path
        under the working directory.

    Returns
    -------
    Path
        An absolute path.

    Examples
    --------
    >>> resource_path("data/poison_crater_ledger.csv").name
    'poison_crater_ledger.csv'
    >>> resource_path("data/no_such_file.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: data/no_such_file.csv: not found in the working directory nor under ...
    """
    if not isinstance(path, str | Path) or str(path) == "":
        raise ParameterError(f"path must be a non-empty file path; got {path!r}")
    given = Path(path).expanduser()
    if given.is_absolute():
        if must_exist and not given.exists():
            raise FileNotFoundError(f"{given}: not found")
        return given
    here = Path.cwd() / given
    if here.exists():
        return here.resolve()
    try:
        root = resource_root()
    except FileNotFoundError:
        root = None
    if root is not None and (root / given).exists():
        return (root / given).resolve()
    if must_exist:
        where = f"the cogstats resources ({root.name})" if root is not None else "no resources"
        raise FileNotFoundError(
            f"{path}: not found in the working directory nor under {where}; "
            f"folders there: {', '.join(RESOURCE_FOLDERS)}"
        )
    return here
