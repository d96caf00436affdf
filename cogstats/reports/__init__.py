"""Report notebooks: a registry, papermill execution and offline HTML/SVG/PNG export.

``run_report(name, out_dir, parameters=None, ci=False)`` executes a registered notebook
(:data:`REPORTS`) in this environment's ``python3`` kernel and writes the executed
notebook, an HTML page that opens offline (charts are inline SVG) and the charts as
standalone SVG/PNG files; ``render_demo_report(out_dir, quick=...)`` runs them all and
writes an index page.  :mod:`cogstats.reports.reference` holds cycgraph's published
operating characteristics and :mod:`cogstats.reports.evaluation` the loops that score
estimators against simulated truth (notebooks do not define functions or loop).

Needs the ``notebook`` extra (papermill, nbconvert, ipykernel, altair, vl-convert-python).
"""

from cogstats.reports.display import (
    InteractiveChart,
    Prose,
    SummaryBlock,
    Table,
    interactive_chart,
    show_table,
    show_text,
    summary_block,
)
from cogstats.reports.registry import (
    REPORTS,
    RESERVED_PARAMETERS,
    Report,
    ReportError,
    default_notebook_dir,
    get_report,
    report_names,
)
from cogstats.reports.resources import resource_path, resource_root
from cogstats.reports.runner import (
    CHART_FORMATS,
    ReportResult,
    export_html,
    render_demo_report,
    run_report,
    save_chart,
)

__all__ = [
    "CHART_FORMATS",
    "REPORTS",
    "RESERVED_PARAMETERS",
    "InteractiveChart",
    "Prose",
    "Report",
    "ReportError",
    "ReportResult",
    "SummaryBlock",
    "Table",
    "default_notebook_dir",
    "export_html",
    "get_report",
    "interactive_chart",
    "render_demo_report",
    "report_names",
    "resource_path",
    "resource_root",
    "run_report",
    "save_chart",
    "show_table",
    "show_text",
    "summary_block",
]
