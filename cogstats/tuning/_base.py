"""What both tuning widgets share: the option controls, validation, the runner, the buttons."""

from __future__ import annotations

import html
import threading
from collections.abc import Mapping
from typing import Any

from cogstats._registry import Entry
from cogstats._validation import ParameterError
from cogstats.tuning.controls import Control, make_control, option_specs
from cogstats.tuning.export import Chosen
from cogstats.tuning.runner import LatestRunner

__all__ = ["TunerBase", "gate_entry", "jupyter_chart", "policy_entry"]


def _text(value: str) -> str:
    """Escape text for HTML content (quotes kept: they are not in an attribute)."""
    return html.escape(value, quote=False)


def jupyter_chart(chart: Any) -> Any:
    """Wrap an altair chart in a ``JupyterChart`` whose JavaScript works offline.

    vl-convert bundles Vega's JavaScript into the widget (``enable_offline``), so the
    chart renders without the CDN altair loads it from by default.  Rendered as SVG (the
    charts are small; their marks can then be read, e.g. by a browser test).
    """
    import contextlib

    import altair as alt

    with contextlib.suppress(ImportError):  # no vl-convert: the CDN
        alt.JupyterChart.enable_offline()
    return alt.JupyterChart(chart, embed_options={"renderer": "svg", "actions": False})


def gate_entry(gate: Any) -> tuple[Entry, dict[str, Any]]:
    """Return a gate's registry entry and options from a name, an import path or a gate object."""
    from cogstats.gates import get_gate

    if isinstance(gate, str):
        return get_gate(gate), {}
    cls = type(gate)
    entry = get_gate(f"{cls.__module__}:{cls.__qualname__}")
    return entry, {f.name: getattr(gate, f.name) for f in entry.fields()}


def policy_entry(policy: Any) -> tuple[Entry, dict[str, Any]]:
    """Return a retrieval policy's registry entry and options (a name, a path or an object)."""
    from cogstats.retrieval import get_policy

    if isinstance(policy, str):
        return get_policy(policy), {}
    cls = type(policy)
    entry = get_policy(f"{cls.__module__}:{cls.__qualname__}")
    return entry, {f.name: getattr(policy, f.name) for f in entry.fields()}


#: What an exported page shows in place of the live controls.
_STATIC_NOTE = (
    '<div class="cogstats-tune-static" style="border:1px dashed #b0b8c4;padding:8px 12px;'
    'font-family:system-ui,sans-serif;font-size:13px;color:#333">'
    "<b>cogstats.tune</b>: the live controls appear here when the notebook runs in "
    "JupyterLab (they need a running kernel); this page shows the answers at the starting "
    "settings below.</div>"
)


class TunerBase:
    """Controls for a gate (and optionally a retrieval policy), a status line, two buttons.

    Subclasses implement ``_request()`` (the work a change asks for, validated here first),
    ``_work(request)`` (runs in the background) and ``_show(request, result)`` (updates the
    charts and tables), and lay out :attr:`widget`.
    """

    def __init__(
        self,
        gate: Entry,
        gate_options: Mapping[str, Any],
        policy: Entry | None,
        policy_options: Mapping[str, Any],
        *,
        debounce: float,
    ) -> None:
        import ipywidgets as widgets

        self.gate_entry = gate
        self.policy_entry = policy
        self.controls: dict[str, dict[str, Control]] = {"gate": {}, "retrieval": {}}
        for part, entry, values in (
            ("gate", gate, gate_options),
            ("retrieval", policy, policy_options),
        ):
            if entry is None:
                continue
            for spec in option_specs(entry, part):
                control = make_control(spec)
                if spec.name in values:
                    control.value = values[spec.name]
                self.controls[part][spec.name] = control
        self.status = widgets.HTML("")
        self.error = widgets.HTML("")
        self.kept = widgets.Textarea(
            value="", layout=widgets.Layout(width="100%", height="220px", display="none")
        )
        self.keep_button = widgets.Button(
            description="Keep settings", icon="check", button_style="success"
        )
        self.pin_button = widgets.Button(
            description="Pin as baseline", icon="thumb-tack", tooltip="compare later moves with"
        )
        self.keep_button.on_click(lambda _: self._on_keep())
        self.pin_button.on_click(lambda _: self.pin())
        self._lock = threading.Lock()
        self.last_error: str | None = None
        self.last_seconds: float | None = None
        self.updates = 0
        self._runner = LatestRunner(self._work, self._published, debounce=debounce)
        self._watch_controls()

    # ------------------------------------------------------------------ hooks
    def _request(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _work(self, request: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _show(self, request: Any, result: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def pin(self) -> None:  # pragma: no cover - abstract
        """Pin the current settings as the baseline."""
        raise NotImplementedError

    def chosen(self) -> Chosen:  # pragma: no cover - abstract
        """Return the current settings."""
        raise NotImplementedError

    # ------------------------------------------------------------------ controls
    def _watch_controls(self) -> None:
        for part in self.controls.values():
            for control in part.values():
                control.observe(lambda change: self.changed())

    def options(self, part: str) -> dict[str, Any]:
        """Return the current value of every option of ``part`` ("gate" or "retrieval")."""
        return {name: c.value for name, c in self.controls[part].items()}

    def set(self, **values: Any) -> None:
        """Set options as if their controls were moved (``gate.min_trials=4`` style names).

        A name is an option of the gate, of the retrieval policy, or ``replicates`` /
        ``seed``; names that two parts share take a ``gate__`` / ``retrieval__`` prefix.
        Each set value triggers a (debounced) update, as a moved control does.
        """
        for name, value in values.items():
            self._control(name).value = value

    def _control(self, name: str) -> Any:
        part, _, option = name.rpartition("__")
        if part:
            return self.controls[part][option]
        owners = [p for p, cs in self.controls.items() if name in cs]
        if len(owners) > 1:
            raise KeyError(
                f"{name!r} is an option of both the gate and the retrieval policy: say "
                f"gate__{name} or retrieval__{name}"
            )
        if not owners:
            extra = self._extra_controls()
            if name in extra:
                return extra[name]
            allowed = sorted({n for cs in self.controls.values() for n in cs} | set(extra))
            raise KeyError(f"no control {name!r}; the controls are {allowed}")
        return self.controls[owners[0]][name]

    def _extra_controls(self) -> dict[str, Any]:
        return {}

    def validate(self) -> str | None:
        """Build the gate and policy from the controls; return the refusal, or None.

        The message is the class's own, the one the command line prints (``cogstats
        gate ... --max-trials 2 --min-trials 3`` says the same).
        """
        try:
            self.gate_entry.make(**self.options("gate"))
            if self.policy_entry is not None:
                self.policy_entry.make(**self.options("retrieval"))
        except (ValueError, TypeError) as exc:  # ParameterError, or a class of one's own
            return str(exc)
        return None

    def changed(self) -> None:
        """React to a control change: validate, then submit a run (or show the refusal)."""
        problem = self.validate()
        with self._lock:
            self.last_error = problem
        if problem is not None:
            self.error.value = (
                f"<div class='cogstats-tune-error' style='color:#b00020'>refused: "
                f"{_text(problem)}</div>"
            )
            self.status.value = "<i>not run: fix the setting above</i>"
            return
        self.error.value = ""
        self.status.value = "<i>running...</i>"
        self._runner.submit(self._request())

    def _published(self, request: Any, result: Any, error: Any, seconds: float) -> None:
        if error is not None:
            self.error.value = (
                f"<div class='cogstats-tune-error' style='color:#b00020'>failed: "
                f"{_text(str(error))}</div>"
            )
            self.status.value = ""
            with self._lock:
                self.last_error = str(error)
            return
        self._show(request, result)
        with self._lock:
            self.last_seconds = seconds
            self.updates += 1
        self.status.value = (
            f"<span class='cogstats-tune-status'>updated in {seconds:.2f} s "
            f"({_text(self._describe(request, result))})</span>"
        )

    def _describe(self, request: Any, result: Any) -> str:
        return ""

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until the latest change has been answered; False on timeout."""
        return self._runner.wait(timeout)

    @property
    def idle(self) -> bool:
        """Whether no run is in progress or waiting."""
        return self._runner.idle

    @property
    def debounce(self) -> float:
        """Seconds without a newer change before a run starts."""
        return self._runner.debounce

    @property
    def runner_stats(self) -> Any:
        """The background runner's counters (submitted, started, published, dropped)."""
        return self._runner.stats

    def close(self) -> None:
        """Stop the background thread and close the widgets."""
        self._runner.close()
        self.widget.close()

    # ------------------------------------------------------------------ keep
    def keep(self) -> Chosen:
        """Return the current settings (what the "Keep settings" button shows).

        Settings the gate or the policy refuses are never exported: with a refused
        control (say ``min_trials=0``) this raises with the class's message, as the
        command line would, instead of giving a command or a spec that cannot run.
        """
        problem = self.validate()
        if problem is not None:
            raise ParameterError(
                f"cannot keep these settings: refused ({problem}); move the control to an "
                "accepted value first"
            )
        return self.chosen()

    def _on_keep(self) -> None:
        try:
            text = self.keep().text()
        except (ValueError, TypeError) as exc:
            text = str(exc) if "cannot keep" in str(exc) else f"cannot keep these settings: {exc}"
        self.kept.value = text
        self.kept.layout.display = "block"

    def _option_boxes(self) -> list[Any]:
        import ipywidgets as widgets

        boxes = []
        for part, entry in (("gate", self.gate_entry), ("retrieval", self.policy_entry)):
            if entry is None or not self.controls[part]:
                continue
            title = f"{entry.kind} {entry.name!r}: {entry.description}"
            boxes.append(widgets.HTML(f"<b>{_text(title)}</b>"))
            boxes += [c.widget for c in self.controls[part].values()]
        return boxes

    widget: Any

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Return the live widget, with an HTML note for a page exported without a kernel.

        JupyterLab renders the widget view; an exported page (nbconvert, no widget state)
        shows the note instead of the widget's text form (``VBox(children=...``).
        """
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict) and "text/html" not in data:
            data["text/html"] = _STATIC_NOTE
        return bundle
