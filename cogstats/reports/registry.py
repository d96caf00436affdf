"""The report notebooks cogstats ships: name -> notebook, parameters, CI parameters.

A report is a thin parameterized notebook in the ``notebooks/`` folder of a checkout, or
of the installed package's resources (:mod:`cogstats.reports.resources`); its first cell,
tagged ``parameters``, declares one ``name: type = value  # help`` per line (types
``int``, ``float``, ``str``, ``bool``, ``list`` and ``dict``).  The notebook is the one
source of the parameters and their defaults; the registry adds a one-line title, the CI
parameters (small enough that every report runs in well under benchmark C3's three
minutes) and says which parameters are file paths (relative ones resolve against the
directory the report is run from, where the notebook's kernel runs).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogstats._registry import Registry
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
    "list": (list, tuple),
    "dict": (dict,),
}


class ReportError(CogstatsError, RuntimeError):
    """A report could not be run or exported (missing notebook, kernel, failed cell)."""


def default_notebook_dir() -> Path:
    """Return the ``notebooks/`` folder of the checkout, or of the installed resources.

    See :func:`cogstats.reports.resources.resource_root`.

    Examples
    --------
    >>> default_notebook_dir().name
    'notebooks'
    """
    from cogstats.reports.resources import resource_root

    return resource_root() / "notebooks"


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
        One line saying what it answers (listed by ``cogstats report`` and on the
        index page).
    ci_parameters : mapping
        Parameter values for CI and ``--quick`` runs.
    path_parameters : tuple of str
        Parameters holding file paths: the notebook resolves them with
        :func:`~cogstats.reports.resources.resource_path` (the working directory of the
        run first, then the checkout or installed resources); the run manifest shows
        them relative to where the report ran.
    """

    name: str
    notebook: str
    title: str
    ci_parameters: Mapping[str, Any] = field(default_factory=dict)
    path_parameters: tuple[str, ...] = ()

    def path(self, notebook_dir: str | Path | None = None) -> Path:
        """Return the notebook file; a :class:`ReportError` when it is not there."""
        folder = Path(notebook_dir) if notebook_dir is not None else default_notebook_dir()
        path = folder / self.notebook
        if not path.is_file():
            raise ReportError(
                f"report {self.name!r}: notebook {self.notebook} not found in {folder.name}/ "
                "(the report notebooks live in notebooks/ of a checkout or of the installed "
                "package's resources; pass notebook_dir=...)"
            )
        return path

    def parameters(self, notebook_dir: str | Path | None = None) -> dict[str, dict[str, Any]]:
        """Return the notebook's parameters: name -> {"type", "default", "help"}.

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
            if kind == "dict" and not all(isinstance(k, str) for k in value):
                raise ParameterError(
                    f"report {self.name!r}: parameter {key!r} must be a dict with string "
                    f"keys (default {declared[key]['default']}); got {value!r}"
                )
            out[key] = list(value) if kind == "list" else value
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


_BUILT_IN: dict[str, Report] = {
    r.name: r
    for r in (
        Report(
            name="quickstart",
            notebook="quickstart.ipynb",
            title="Quickstart: from a ledger to attribution, a gate's decisions, a simulation "
            "with known truth and a chart, in ten minutes",
            ci_parameters={"replicates": 40},
            path_parameters=("ledger_path", "spec_path"),
        ),
        Report(
            name="ledger_audit",
            notebook="ledger_audit.ipynb",
            title="Your ledger: which lessons help or hurt by several estimators, what each "
            "gate decides, which lessons cannot be told apart, which columns nothing adjusts for",
            ci_parameters={},
            path_parameters=("ledger_path",),
        ),
        Report(
            name="poison_replay",
            notebook="poison_replay.ipynb",
            title="cycgraph's recorded poisoning demo replayed gate by gate through "
            "cycgraph's gate and the recommended gate",
            ci_parameters={},
            path_parameters=("runs_path", "lessons_path"),
        ),
        Report(
            name="threshold_explorer",
            notebook="threshold_explorer.ipynb",
            title="Move the gate's thresholds with sliders: false eviction, missed poison and "
            "time to verdict of a precomputed sweep (works offline)",
            ci_parameters={"spec_path": "simulations/threshold_sweep_ci.toml", "replicates": 20},
            path_parameters=("spec_path", "sweep_path"),
        ),
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
            name="gate_comparison",
            notebook="gate_comparison.ipynb",
            title="Gates side by side: cycgraph's margin and inference rules and the "
            "recommended preset on S1, S2, S4 and the S2 variants, goals met or missed",
            ci_parameters={"replicates": 20, "bootstrap_resamples": 199},
            path_parameters=(
                "s1_spec_path",
                "s2_spec_path",
                "s4_spec_path",
                "variants_path",
                "helpful_spec_path",
            ),
        ),
        Report(
            name="tuning",
            notebook="tuning.ipynb",
            title="Tune a gate live in JupyterLab: every option a control, each move "
            "re-simulated beside a baseline, or replayed over your ledger (needs a kernel)",
            ci_parameters={"replicates": 40},
            path_parameters=("spec_path", "ledger_path"),
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

#: The reports: name -> :class:`Report` (a :class:`~cogstats._registry.Registry`).
REPORTS: Registry[Report] = Registry("report", param="report", sort=False, values=_BUILT_IN)


def report_names() -> list[str]:
    """Return the registered report names, sorted.

    Examples
    --------
    >>> report_names()  # doctest: +NORMALIZE_WHITESPACE
    ['gate_comparison', 'ledger_audit', 'operating_characteristics', 'poison_crater',
     'poison_replay', 'quickstart', 'threshold_explorer', 'tradeoffs', 'tuning',
     'write_path_admission']
    """
    return sorted(REPORTS)


def get_report(name: str) -> Report:
    """Return the registry entry ``name``; an error naming the registered reports otherwise.

    Examples
    --------
    >>> get_report("operating_characteristic")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: report must be one of [...]; got 'operating_char...
    """
    return REPORTS.lookup(name)
