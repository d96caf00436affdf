"""The report notebooks cogstats ships: name -> notebook, parameters, CI parameters.

A report is a thin parameterized notebook in the repository's ``notebooks/`` folder (its
first cell, tagged ``parameters``, declares one ``name: type = value  # help`` per line).
The notebook is the one source of the parameters and their defaults; the registry adds
the CI parameters (small enough that every report runs in well under benchmark C3's three
minutes) and says which parameters are file paths (resolved against the caller's working
directory, while the notebook itself runs in ``notebooks/``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogstats._validation import CogstatsError, ParameterError, suggest

__all__ = [
    "REPORTS",
    "RESERVED_PARAMETERS",
    "Report",
    "ReportError",
    "default_notebook_dir",
    "get_report",
    "report_names",
]

#: Parameters every report declares and :func:`~cogstats.reports.run_report` fills in.
RESERVED_PARAMETERS: tuple[str, ...] = ("figures_dir",)

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float, int),
    "str": (str,),
    "bool": (bool,),
}


class ReportError(CogstatsError, RuntimeError):
    """A report could not be run or exported (missing notebook, kernel, failed cell)."""


def default_notebook_dir() -> Path:
    """The repository's ``notebooks/`` folder (next to the ``cogstats`` package).

    Examples
    --------
    >>> default_notebook_dir().name
    'notebooks'
    """
    return Path(__file__).resolve().parents[2] / "notebooks"


@dataclass(frozen=True)
class Report:
    """One registered report notebook.

    Attributes
    ----------
    name : str
        Registry key (``cogstats report NAME``).
    notebook : str
        File name in the notebooks folder.
    title : str
        One line saying what it shows.
    ci_parameters : mapping
        Parameter values for CI and ``--quick`` runs.
    path_parameters : tuple of str
        Parameters holding file paths: values passed by a caller are resolved against
        the caller's working directory (the notebook runs in the notebooks folder, where
        its own defaults are relative).
    """

    name: str
    notebook: str
    title: str
    ci_parameters: Mapping[str, Any] = field(default_factory=dict)
    path_parameters: tuple[str, ...] = ()

    def path(self, notebook_dir: str | Path | None = None) -> Path:
        """The notebook file; a :class:`ReportError` when it is not there."""
        folder = Path(notebook_dir) if notebook_dir is not None else default_notebook_dir()
        path = folder / self.notebook
        if not path.is_file():
            raise ReportError(
                f"report {self.name!r}: notebook {path} not found (the report notebooks "
                "live in the repository's notebooks/ folder; pass notebook_dir=...)"
            )
        return path

    def parameters(self, notebook_dir: str | Path | None = None) -> dict[str, dict[str, Any]]:
        """The notebook's parameters: name -> {"type", "default", "help"}.

        Read from the ``parameters`` cell by papermill's parser.

        Examples
        --------
        >>> params = get_report("operating_characteristics").parameters()
        >>> params["replicates"]["type"]
        'int'
        """
        return {name: dict(info) for name, info in _parameters(str(self.path(notebook_dir)))}

    def validate(
        self, parameters: Mapping[str, Any], notebook_dir: str | Path | None = None
    ) -> dict[str, Any]:
        """Check names and types of ``parameters`` against the notebook's; return a copy.

        Examples
        --------
        >>> get_report("poison_crater").validate({"replicats": 10})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cogstats._validation.ParameterError: ...'replicats' (did you mean 'replicates'?)...
        """
        declared = self.parameters(notebook_dir)
        if not isinstance(parameters, Mapping):
            raise ParameterError(
                f"parameters must be a mapping name -> value; got {type(parameters).__name__}"
            )
        out: dict[str, Any] = {}
        for key, value in parameters.items():
            if key not in declared:
                raise ParameterError(
                    f"report {self.name!r} has no parameter {key!r}{suggest(str(key), declared)}; "
                    f"allowed: {sorted(declared)}"
                )
            kind = declared[key]["type"]
            allowed = _TYPES.get(kind)
            bad_bool = isinstance(value, bool) and kind in ("int", "float")
            if allowed is not None and (bad_bool or not isinstance(value, allowed)):
                raise ParameterError(
                    f"report {self.name!r}: parameter {key!r} must be {kind} "
                    f"(default {declared[key]['default']}); got {value!r}"
                )
            out[key] = value
        return out


@functools.lru_cache(maxsize=32)
def _parameters(path: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    import papermill

    raw = papermill.inspect_notebook(path)
    if not raw:
        raise ReportError(f"notebook {path} has no cell tagged 'parameters'")
    return tuple(
        (
            name,
            {
                "type": info.get("inferred_type_name"),
                "default": info.get("default"),
                "help": info.get("help", ""),
            },
        )
        for name, info in raw.items()
    )


REPORTS: dict[str, Report] = {
    r.name: r
    for r in (
        Report(
            name="operating_characteristics",
            notebook="operating_characteristics.ipynb",
            title="S1: cycgraph's gate, outcome rates by true effect and run budget, "
            "against cycgraph's published table",
            ci_parameters={"replicates": 200},
            path_parameters=("spec_path",),
        ),
        Report(
            name="poison_crater",
            notebook="poison_crater.ipynb",
            title="S2: fitness around the poisoning, the gate's decisions, and estimators "
            "compared on the same ledgers",
            ci_parameters={"replicates": 100, "accuracy_replicates": 10, "permutations": 999},
            path_parameters=("spec_path",),
        ),
        Report(
            name="tradeoffs",
            notebook="tradeoffs.ipynb",
            title="Gate settings traded off: false eviction and missed poison against time "
            "to verdict, with the Pareto frontier",
            ci_parameters={"replicates": 40},
            path_parameters=("spec_path", "sweep_path"),
        ),
        Report(
            name="write_path_admission",
            notebook="write_path_admission.ipynb",
            title="Write-path admission against read filtering in a shared vector memory: "
            "recall in affected regions, laundering, the admission ROC, the recall monitor",
            ci_parameters={
                "replicates": 2,
                "monitor_replicates": 1,
                "dim": 64,
                "tenants": 2,
                "monitor_periods": 16,
            },
            path_parameters=("spec_path",),
        ),
    )
}


def report_names() -> list[str]:
    """The registered report names, sorted.

    Examples
    --------
    >>> report_names()
    ['operating_characteristics', 'poison_crater', 'tradeoffs', 'write_path_admission']
    """
    return sorted(REPORTS)


def get_report(name: str) -> Report:
    """The registry entry ``name``; an error naming the registered reports otherwise.

    Examples
    --------
    >>> get_report("operating_characteristic")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: report must be one of [...]; got 'operating_char...
    """
    if not isinstance(name, str) or name not in REPORTS:
        hint = suggest(name, REPORTS) if isinstance(name, str) else ""
        raise ParameterError(f"report must be one of {report_names()}; got {name!r}{hint}")
    return REPORTS[name]
