"""Run a report notebook with papermill and export it as offline HTML.

:func:`run_report` executes a registered notebook in the environment's own ``python3``
kernel, writes the executed notebook, a self-contained HTML page (charts are inline SVG,
no script is fetched from anywhere) and the charts the notebook saved as standalone
SVG/PNG files.  :func:`render_demo_report` runs every report and writes an index page.
"""

from __future__ import annotations

import html
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogstats._validation import ParameterError, check_choice
from cogstats.reports.registry import (
    RESERVED_PARAMETERS,
    ReportError,
    get_report,
    report_names,
)

__all__ = [
    "CHART_FORMATS",
    "ReportResult",
    "export_html",
    "render_demo_report",
    "run_report",
    "save_chart",
]

#: Formats :func:`save_chart` writes: vl-convert renders all three without a browser.
CHART_FORMATS: tuple[str, ...] = ("svg", "png", "html")

# lab template without its <script src=...> blocks (require.js, MathJax, mermaid,
# widgets): every one of them loads from a CDN, and the reports must open offline.  SVG
# outputs go into the page as <svg> markup: the stock block either base64-encodes them
# into an <img> or passes them through an HTML sanitizer that drops <svg> altogether.
# The markup is the notebook's own output (vl-convert's rendering of our charts).
_OFFLINE_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{% block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg %}
"""
_REMOTE = re.compile(
    r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//", re.I
)


# Start-up noise of the kernel: ipykernel warns (log level WARNING) that it runs over TCP
# without encryption, and debugpy that frozen modules hide breakpoints.  Neither concerns
# a report run on the local machine; real warnings from the report's code still show.
_KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]
_KERNEL_ENVIRONMENT = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
#: Packages whose versions the run manifest records.
MANIFEST_PACKAGES: tuple[str, ...] = (
    "cogstats",
    "numpy",
    "scipy",
    "polars",
    "statsmodels",
    "numba",
    "altair",
    "vl-convert-python",
    "papermill",
    "nbconvert",
)


@dataclass(frozen=True)
class ReportResult:
    """What :func:`run_report` wrote.

    Attributes
    ----------
    name : str
        The report.
    notebook : Path
        The executed notebook (with outputs and the run manifest).
    html : Path
        The offline HTML page.
    figures : tuple of Path
        The charts the notebook saved (SVG and PNG), sorted.
    tables : tuple of Path
        Tables the notebook wrote beside the page (``<name>_*.csv`` / ``.parquet``).
    parameters : mapping
        The parameters the notebook ran with (after CI and caller overrides).
    execute_seconds, export_seconds : float
        Wall-clock time of the papermill run and of the HTML export.
    """

    name: str
    notebook: Path
    html: Path
    figures: tuple[Path, ...]
    tables: tuple[Path, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    execute_seconds: float = 0.0
    export_seconds: float = 0.0

    def summary(self) -> str:
        """Return a few lines: files and timings."""
        return (
            f"report {self.name!r}: executed in {self.execute_seconds:.1f} s, exported in "
            f"{self.export_seconds:.1f} s\n  html: {self.html}\n  notebook: {self.notebook}\n"
            f"  figures: {len(self.figures)} file(s) under {self.html.parent}"
            + (f"\n  tables: {', '.join(p.name for p in self.tables)}" if self.tables else "")
        )


def save_chart(
    chart: Any,
    directory: str | Path,
    name: str,
    formats: Sequence[str] = ("svg", "png"),
    *,
    scale_factor: float = 2.0,
) -> list[Path]:
    """Save an altair chart as standalone files ``directory/name.<format>``.

    SVG and PNG are rendered by vl-convert (no browser, no network); ``html`` embeds the
    Vega JavaScript inline (``inline=True``), so it too opens offline.  An empty
    ``directory`` saves nothing (what a report notebook does when run by hand).

    Parameters
    ----------
    chart : altair chart
        Any top-level altair chart.
    directory : str or Path
        Target folder (created); ``""`` to skip saving.
    name : str
        File stem (letters, digits, ``_``, ``-``, ``.``).
    formats : sequence of {"svg", "png", "html"}
        What to write.
    scale_factor : float
        PNG resolution multiplier.

    Returns
    -------
    list of Path
        The files written.

    Examples
    --------
    >>> import tempfile, altair as alt, polars as pl
    >>> chart = alt.Chart(pl.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    >>> [p.name for p in save_chart(chart, tempfile.mkdtemp(), "line")]
    ['line.svg', 'line.png']
    >>> save_chart(chart, "", "line")
    []
    """
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
        raise ParameterError(f"name must be a file stem of letters, digits, _ - .; got {name!r}")
    for fmt in formats:
        check_choice("formats", fmt, CHART_FORMATS)
    if directory == "" or directory is None:
        return []
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        if fmt == "png":
            chart.save(str(path), scale_factor=scale_factor)
        elif fmt == "html":
            chart.save(str(path), inline=True)
        else:
            chart.save(str(path))
        written.append(path)
    return written


def export_html(
    notebook: str | Path,
    html_path: str | Path,
    *,
    show_code: bool = False,
) -> Path:
    """Write an executed notebook as a self-contained HTML page that opens offline.

    nbconvert's HTML exporter (lab template) without the blocks that load require.js,
    MathJax, mermaid or widget scripts from CDNs; images and SVG outputs are inline.
    Code cells are hidden unless ``show_code`` (their outputs stay); the page title is
    the notebook's ``title`` metadata.  Raises :class:`ReportError` if the page would
    still fetch anything remote.

    Examples
    --------
    >>> import tempfile, nbformat, pathlib
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hello"),
    ...                                      nbformat.v4.new_code_cell("secret = 1")])
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> nbformat.write(nb, d / "a.ipynb")
    >>> page = export_html(d / "a.ipynb", d / "a.html").read_text()
    >>> "Hello" in page, "cdn" in page.lower(), "secret" in page
    (True, False, False)
    >>> "secret" in export_html(d / "a.ipynb", d / "b.html", show_code=True).read_text()
    True
    """
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[jinja2.DictLoader({"cogstats_offline.html.j2": _OFFLINE_TEMPLATE})],
        template_file="cogstats_offline.html.j2",
        embed_images=True,
        exclude_input=not show_code,
        exclude_input_prompt=not show_code,
        exclude_output_prompt=True,
    )
    nb = nbformat.read(str(notebook), as_version=4)
    # the saved state of live widgets (cogstats.tune's) is of no use on an offline page,
    # whose widget scripts are not loaded; JupyterChart's alone is megabytes of JavaScript
    nb.metadata.pop("widgets", None)
    body, _ = exporter.from_notebook_node(nb)
    remote = _REMOTE.search(body)
    if remote:
        raise ReportError(
            f"the HTML export of {Path(notebook).name} would load a remote resource: "
            f"{remote.group(0)!r}"
        )
    out = Path(html_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out


def _check_kernel(kernel_name: str) -> None:
    """Check that the kernel runs this interpreter (so it sees this cogstats and its extras)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel:
        raise ReportError(
            f"no Jupyter kernel named {kernel_name!r}; install ipykernel in this environment "
            f"({sys.executable} -m pip install ipykernel)"
        ) from None
    exe = spec.argv[0] if spec.argv else ""
    major, minor = sys.version_info[:2]
    # jupyter_client replaces these names with sys.executable when it starts the kernel
    same = exe in ("python", f"python{major}", f"python{major}.{minor}")
    if not same and exe:
        try:
            same = Path(exe).resolve() == Path(sys.executable).resolve()
        except OSError:
            same = False
    if not same:
        raise ReportError(
            f"kernel {kernel_name!r} runs {exe!r}, not this interpreter ({sys.executable}); "
            "the report would not see this environment's cogstats.  Install ipykernel here "
            "or register this environment's kernel (python -m ipykernel install --sys-prefix)"
        )


def _shown_path(value: Any, bases: Sequence[Path]) -> Any:
    """Return an absolute path as the page shows it: relative to a base, else its file name."""
    if not isinstance(value, str) or not value or not os.path.isabs(value):
        return value
    path = Path(value)
    for base in bases:
        try:
            return str(path.relative_to(base)) or "."
        except ValueError:
            continue
    return path.name


def _literal(text: Any) -> Any:
    """Turn a parameter's default as papermill reports it (source text) into a value."""
    import ast

    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _kernel_path(path: Path, cwd: Path) -> str:
    """Return a path for the kernel (which runs in ``cwd``): relative when inside it."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _git_commit(root: Path) -> str:
    """Return the checkout's commit (and whether it has uncommitted changes), or why none."""
    import subprocess

    if not (root / ".git").exists():
        return "none (installed package, not a git checkout)"
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"
    return head + (" (with uncommitted changes)" if dirty else "")


def _versions() -> str:
    from importlib import metadata

    parts = [f"python {sys.version.split()[0]}"]
    for name in MANIFEST_PACKAGES:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(parts)


def _publish(
    nb: Any,
    *,
    name: str,
    shown: Mapping[str, Any],
    started: str,
    seconds: float,
) -> None:
    """Give an executed notebook its published look (in place).

    Title from the first ``# heading``; cells tagged ``summary`` moved under it; the
    injected parameters cell rewritten with the values as the page shows them (no
    absolute machine paths); the run manifest appended.
    """
    import nbformat

    from cogstats.reports.display import show_table
    from cogstats.reports.resources import resource_root

    report = get_report(name)
    cells = list(nb.cells)
    first_md = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"), None)
    title = report.title
    if first_md is not None:
        for line in cells[first_md].source.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    nb.metadata["title"] = title
    summary = [c for c in cells if "summary" in c.metadata.get("tags", [])]
    if summary and first_md is not None:
        rest = [c for c in cells if c not in summary]
        at = rest.index(cells[first_md]) + 1
        cells = rest[:at] + summary + rest[at:]
    for cell in cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = "# Parameters\n" + "\n".join(f"{k} = {v!r}" for k, v in shown.items())
    import polars as pl

    try:
        root: Path | None = resource_root()
    except FileNotFoundError:
        root = None
    rows = [
        ("report", f"{name} (cogstats report {name})"),
        ("started", f"{started} UTC; ran {seconds:.1f} s"),
        ("seed", str(shown.get("seed", "none (the report draws no random numbers)"))),
        *((f"parameter {k}", repr(v)) for k, v in shown.items() if k != "seed"),
        ("package versions", _versions()),
        ("git commit", _git_commit(root) if root is not None else "unknown"),
    ]
    frame = pl.DataFrame({"item": [r[0] for r in rows], "value": [r[1] for r in rows]})
    manifest = show_table(frame)._repr_html_()
    cells.append(
        nbformat.v4.new_markdown_cell(
            "## Run manifest\n\nWhat produced this page, to run it again.\n\n" + manifest
        )
    )
    nb.cells = cells


def run_report(
    name: str,
    out_dir: str | Path,
    parameters: Mapping[str, Any] | None = None,
    *,
    ci: bool = False,
    show_code: bool = False,
    notebook_dir: str | Path | None = None,
    kernel_name: str = "python3",
    cell_timeout: float | None = None,
    log_output: bool = False,
) -> ReportResult:
    """Execute a registered report notebook with papermill and export it offline.

    Parameters
    ----------
    name : str
        A key of :data:`~cogstats.reports.REPORTS`.
    out_dir : str or Path
        Where to write ``<name>.ipynb``, ``<name>.html`` and ``<name>_figures/``.
    parameters : mapping, optional
        Parameter values (names and types checked against the notebook's parameters
        cell; unknown names raise, listing the allowed ones).  Applied over the CI
        parameters when ``ci`` is true.  Relative file paths resolve against the
        working directory, where the notebook's kernel runs.
    ci : bool
        Use the report's CI parameters (small runs for tests, benchmark C3 and
        ``cogstats report NAME --quick``).
    show_code : bool
        Keep the code cells in the page (hidden by default: the page shows prose,
        tables and charts).
    notebook_dir : str or Path, optional
        Folder holding the notebooks (default: the checkout's or the installed
        package's ``notebooks/``, :func:`~cogstats.reports.default_notebook_dir`).
    kernel_name : str
        Jupyter kernel; it must run this interpreter (checked).
    cell_timeout : float, optional
        Seconds a cell may run (default: no limit).
    log_output : bool
        Echo the notebook's output while it runs.

    Returns
    -------
    ReportResult

    Notes
    -----
    The page gets the notebook's heading as its title, the cell tagged ``summary``
    right under it, and a run manifest at the end (parameters, seed, package versions,
    git commit); paths in it are shown relative to the working directory, or as file
    names.  Every registered report runs through here at its CI parameters in
    ``tests/notebooks/test_execute.py`` and in benchmark C3.

    Raises
    ------
    ParameterError
        Unknown report name or parameter, or a parameter of the wrong type.
    ReportError
        Missing notebook or kernel, a failing cell (the message names the cell and the
        partly executed notebook), or an HTML page that would load a remote resource.

    Examples
    --------
    >>> run_report("poison_crater", "out", {"replicate": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: ...no parameter 'replicate' (did you mean 'replicates'?)...
    """
    import datetime

    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    report = get_report(name)
    user = report.validate(dict(parameters or {}), notebook_dir)
    src = report.path(notebook_dir)
    for key in report.path_parameters:
        if key in user and isinstance(user[key], str) and user[key]:
            user[key] = os.path.expanduser(user[key])
    cwd = Path.cwd().resolve()
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    figures = out / f"{name}_figures"
    params: dict[str, Any] = {}
    if ci:
        params.update(report.ci_parameters)
    params.update(user)
    declared = report.parameters(notebook_dir)
    for key in RESERVED_PARAMETERS:
        if key not in declared:
            raise ReportError(f"notebook {src.name} does not declare the parameter {key!r}")
    params.setdefault("figures_dir", _kernel_path(figures, cwd))
    _check_kernel(kernel_name)
    for key, value in _KERNEL_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    executed = out / f"{name}.ipynb"
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(src),
            str(executed),
            parameters=params,
            kernel_name=kernel_name,
            cwd=str(cwd),
            progress_bar=False,
            log_output=log_output,
            execution_timeout=cell_timeout,
            extra_arguments=list(_KERNEL_ARGUMENTS),
        )
    except PapermillExecutionError as exc:
        raise ReportError(
            f"report {name!r} failed in cell {exc.exec_count} ({exc.ename}: {exc.evalue}); "
            f"the partly executed notebook is {executed}"
        ) from exc
    executed_s = time.perf_counter() - start
    nb = nbformat.read(str(executed), as_version=4)
    effective = {k: _literal(info["default"]) for k, info in declared.items()}
    effective.update(params)
    shown = {k: _shown_path(v, (cwd, out)) for k, v in effective.items()}
    _publish(nb, name=name, shown=shown, started=started, seconds=executed_s)
    nbformat.write(nb, str(executed))
    start = time.perf_counter()
    page = export_html(executed, out / f"{name}.html", show_code=show_code)
    export_s = time.perf_counter() - start
    saved = Path(params["figures_dir"])
    saved = saved if saved.is_absolute() else cwd / saved
    files = tuple(sorted(p for p in saved.glob("*") if p.is_file())) if saved.is_dir() else ()
    tables = tuple(sorted(p for p in out.glob(f"{name}_*") if p.suffix in (".csv", ".parquet")))
    return ReportResult(
        name=name,
        notebook=executed,
        html=page,
        figures=files,
        tables=tables,
        parameters=params,
        execute_seconds=executed_s,
        export_seconds=export_s,
    )


def render_demo_report(
    out_dir: str | Path,
    *,
    quick: bool = False,
    reports: Sequence[str] | None = None,
    parameters: Mapping[str, Mapping[str, Any]] | None = None,
    notebook_dir: str | Path | None = None,
    show_code: bool = False,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run every registered report (CI parameters when ``quick``) and write an index page.

    Parameters
    ----------
    out_dir : str or Path
        Folder for the reports (``<name>.html``, ``<name>.ipynb``, ``<name>_figures/``)
        and ``index.html``.
    quick : bool
        Run at the reports' CI parameters (seconds instead of minutes).
    reports : sequence of str, optional
        Which reports (default: all, in registry order).
    parameters : mapping, optional
        Per-report parameter values, ``report name -> {parameter: value}`` (applied
        over the CI parameters when ``quick``), e.g.
        ``{"tradeoffs": {"sweep_path": "sweeps/threshold_sweep"}}``.
    notebook_dir : str or Path, optional
        Folder holding the notebooks (default: :func:`default_notebook_dir`).
    show_code : bool
        Keep the code cells in the pages.
    workers : int
        Reports run at the same time (each in its own kernel); benchmark C3 allows two.
    progress : callable, optional
        Called with one line when each report starts (``"[2/10] tradeoffs: started"``)
        and when it ends (``"[2/10] tradeoffs: done in 31.4 s (3 of 10 done, 95 s so
        far)"``, or ``failed after ...``); ``cogstats demo`` prints them.  Default:
        silent.

    Returns
    -------
    Path
        ``out_dir/index.html``: the date, the cogstats version and mode, and for each
        report a link, its one-line description, its run time and its figures (no
        scripts).

    Notes
    -----
    ``cogstats demo`` calls this.  ``tests/notebooks/test_execute.py`` runs it with
    ``quick=True`` and checks every page (inline SVG charts, nothing remote, no error
    output, no machine paths) and the index; benchmark C3 times the same runs.

    Examples
    --------
    >>> import tempfile
    >>> index = render_demo_report(tempfile.mkdtemp(), quick=True, reports=[])  # no report
    >>> index.name, "<script" in index.read_text()
    ('index.html', False)
    >>> _ = render_demo_report(tempfile.mkdtemp(), quick=True, reports=["quickstart"],
    ...                        progress=print)  # doctest: +SKIP
    [1/1] quickstart: started
    [1/1] quickstart: done in 12.3 s (1 of 1 done, 12 s so far)
    """
    import datetime
    from concurrent.futures import ThreadPoolExecutor
    from importlib import metadata

    from cogstats._validation import check_int

    n_workers = int(check_int("workers", workers, minimum=1))  # type: ignore[arg-type]
    names = list(reports) if reports is not None else list(report_names())
    overrides = dict(parameters or {})
    for n in names:
        get_report(n)
    for n, values in overrides.items():
        if n not in names:
            raise ParameterError(
                f"parameters names report {n!r}, which is not among the reports run: {names}"
            )
        get_report(n).validate(values, notebook_dir)  # every error before the first run
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress if progress is not None else (lambda _line: None)
    lock = threading.Lock()
    finished = [0]
    started_all = time.perf_counter()

    def one(n: str) -> ReportResult:
        tag = f"[{names.index(n) + 1}/{len(names)}] {n}"
        with lock:
            say(f"{tag}: started")
        t0 = time.perf_counter()
        try:
            result = run_report(
                n, out, overrides.get(n), ci=quick, notebook_dir=notebook_dir, show_code=show_code
            )
        except BaseException:
            with lock:
                say(f"{tag}: failed after {time.perf_counter() - t0:.1f} s")
            raise
        with lock:
            finished[0] += 1
            say(
                f"{tag}: done in {time.perf_counter() - t0:.1f} s ({finished[0]} of "
                f"{len(names)} done, {time.perf_counter() - started_all:.0f} s so far)"
            )
        return result

    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        results = list(pool.map(one, names))
    items = []
    for r in results:
        description = html.escape(get_report(r.name).title)
        figs = ", ".join(
            f'<a href="{html.escape(os.path.relpath(f, out))}">{html.escape(f.name)}</a>'
            for f in r.figures
            if f.suffix == ".svg"
        )
        tables = ", ".join(
            f'<a href="{html.escape(t.name)}">{html.escape(t.name)}</a>' for t in r.tables
        )
        extra = f"; figures (SVG): {figs}" if figs else ""
        extra += f"; tables: {tables}" if tables else ""
        items.append(
            f'<li><a href="{html.escape(r.html.name)}"><strong>{html.escape(r.name)}</strong>'
            f"</a>: {description}<br><small>ran {r.execute_seconds:.1f} s{extra}</small></li>"
        )
    skipped = [n for n in report_names() if n not in names]
    items += [
        f"<li><strong>{html.escape(n)}</strong>: {html.escape(get_report(n).title)}<br>"
        f"<small>not rendered in this run: <code>cogstats report {html.escape(n)}"
        f"{' --quick' if quick else ''}</code> renders it</small></li>"
        for n in skipped
    ]
    mode = "quick (CI parameters)" if quick else "full parameters"
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        version = metadata.version("cogstats")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        version = "unknown"
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>cogstats reports</title></head>"
        '<body style="font-family:system-ui,sans-serif;max-width:60em;margin:2em auto">'
        "<h1>cogstats reports</h1>"
        f'<p class="cogstats-index-meta">{html.escape(today)}; cogstats {html.escape(version)};'
        f" {mode}.</p><ul>{''.join(items)}</ul></body></html>\n"
    )
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
