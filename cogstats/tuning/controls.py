"""One control per option of a registered gate or retrieval policy, from its options dataclass.

The same source as the command line's flags (:mod:`cogstats._cli_options`): the fields of
the registered options dataclass give the names, the type hints the kind of control
(``bool`` a checkbox, ``Literal`` a drop-down, ``int``/``float`` a slider, ``X | None`` a
slider that can be switched off, anything else a JSON text box), and the class's numpydoc
``Parameters`` section the help text and the bounds it states (``(>= 1)``, ``in [0.5,
0.999]``, ``(< 0.5)``).  The bounds only size the sliders: the class validates every
value, and a value it refuses is shown with the class's own message, the message the
command line prints.

:func:`option_specs` is plain Python (no widgets); :func:`make_control` builds an
ipywidgets control for one :class:`OptionSpec`.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cogstats._cli_options import param_help
from cogstats._registry import Entry

__all__ = ["OptionSpec", "make_control", "option_specs", "parse_text"]

_NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"
_BETWEEN = re.compile(rf"in\s*([\[(])\s*{_NUM}\s*,\s*{_NUM}\s*([\])])")
_LOWER = re.compile(rf"(?<![<>])(>=?)\s*{_NUM}")
_UPPER = re.compile(rf"(<=?)\s*{_NUM}")


@dataclass(frozen=True)
class OptionSpec:
    """What a control needs to know about one option.

    Attributes
    ----------
    part : str
        ``"gate"`` or ``"retrieval"``: which part the option belongs to.
    name : str
        The option (the dataclass field).
    kind : str
        ``"bool"``, ``"choice"``, ``"int"``, ``"float"`` or ``"json"`` (any other type:
        typed as JSON, or a plain string).
    default : object
        The class's default (None where the option is optional and unset).
    optional : bool
        Whether None is allowed (``X | None``).
    choices : tuple of str
        For ``"choice"``.
    minimum, maximum : float or None
        The bounds the help text states (None where it states none).
    help : str
        The help text (the command line's).
    flag : str
        The command-line flag (``--min-trials``).
    """

    part: str
    name: str
    kind: str
    default: Any
    optional: bool
    choices: tuple[str, ...]
    minimum: float | None
    maximum: float | None
    help: str
    flag: str

    def slider_range(self) -> tuple[float, float]:
        """Return the (low, high) of a slider for this option.

        The stated bounds where there are some, else from zero (or the lower bound) to
        four times the default (at least 10 for integers, 1 for reals).

        Examples
        --------
        >>> from cogstats.gates import get_gate
        >>> spec = {s.name: s for s in option_specs(get_gate("cycgraph"), "gate")}
        >>> spec["promote_confidence"].slider_range(), spec["min_trials"].slider_range()
        ((0.5, 0.999), (1.0, 12.0))
        """
        default = self.default if isinstance(self.default, int | float) else None
        low = self.minimum if self.minimum is not None else min(0.0, float(default or 0))
        if self.maximum is not None:
            return float(low), float(self.maximum)
        scale = abs(float(default)) * 4 if default else 0.0
        floor = 10.0 if self.kind == "int" else 1.0
        return float(low), float(max(low + floor, scale))


def _hints(cls: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: a JSON text box
        return {}


def _help(cls: type) -> dict[str, str]:
    """Return the numpydoc help of each option, from the class or (when it has none) its bases."""
    out: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if base is not object:
            out.update({k: v for k, v in param_help(base).items() if v})
    return out


def _bounds(text: str) -> tuple[float | None, float | None]:
    """Return the numeric bounds a help text states, e.g. ``(>= 1)`` or ``in [0.5, 0.999]``."""
    between = _BETWEEN.search(text)
    if between:
        return float(between.group(2)), float(between.group(3))
    low = _LOWER.search(text)
    high = _UPPER.search(text)
    return (float(low.group(2)) if low else None), (float(high.group(2)) if high else None)


def option_specs(entry: Entry, part: str) -> tuple[OptionSpec, ...]:
    """Return one :class:`OptionSpec` per option of a registry entry, in field order.

    Parameters
    ----------
    entry : Entry
        A gate's or retrieval policy's registry entry (``get_gate(name)``,
        ``get_policy(name)``).
    part : {"gate", "retrieval"}
        Which part it is.

    Returns
    -------
    tuple of OptionSpec

    Examples
    --------
    >>> from cogstats.gates import get_gate
    >>> specs = option_specs(get_gate("cycgraph"), "gate")
    >>> [(s.name, s.kind) for s in specs][:3]
    [('decision_rule', 'choice'), ('min_trials', 'int'), ('promote_margin', 'float')]
    >>> specs[1].minimum, specs[1].flag
    (1.0, '--min-trials')
    """
    hints = _hints(entry.options)
    helps = _help(entry.options)
    defaults = entry.defaults()
    out = []
    for f in entry.fields():
        hint = hints.get(f.name, Any)
        base, optional = _strip_none(hint)
        choices: tuple[str, ...] = ()
        if base is bool:
            kind = "bool"
        elif typing.get_origin(base) is typing.Literal:
            kind, choices = "choice", tuple(str(a) for a in typing.get_args(base))
        elif base is int:
            kind = "int"
        elif base is float:
            kind = "float"
        else:
            kind = "json"
        text = helps.get(f.name, "")
        low, high = _bounds(text) if kind in ("int", "float") else (None, None)
        out.append(
            OptionSpec(
                part=part,
                name=f.name,
                kind=kind,
                default=defaults.get(f.name),
                optional=optional,
                choices=choices,
                minimum=low,
                maximum=high,
                help=text,
                flag="--" + f.name.replace("_", "-"),
            )
        )
    return tuple(out)


def _strip_none(hint: Any) -> tuple[Any, bool]:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else Any), True
    return hint, False


def parse_text(text: str, default: Any) -> Any:
    """Read a JSON text box: JSON when it parses (lists become tuples where the default is one).

    Anything else is kept as the string, as the command line reads ``--method ols``.

    Examples
    --------
    >>> parse_text('["difficulty"]', ("difficulty_proxy",)), parse_text("ols", "welch")
    (('difficulty',), 'ols')
    >>> parse_text("none", None) is None
    True
    """
    stripped = text.strip()
    if stripped.lower() in ("none", "null") and not isinstance(default, str):
        return None
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        return stripped
    if isinstance(value, list) and isinstance(default, tuple):
        return tuple(value)
    if isinstance(default, str) and not isinstance(value, str):
        return stripped  # a number-looking string option stays a string
    return value


def show_text(value: Any) -> str:
    """Return the text a JSON box shows for ``value`` (the inverse of :func:`parse_text`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, Sequence):
        return json.dumps(list(value))
    return "none" if value is None else json.dumps(value)


class _Optional:
    """A slider that can be switched off (value None): a checkbox beside it."""

    def __init__(self, widgets: Any, slider: Any, spec: OptionSpec) -> None:
        self.slider = slider
        self.enabled = widgets.Checkbox(
            value=spec.default is not None,
            description="",
            indent=False,
            layout=widgets.Layout(width="28px"),
            tooltip=f"set {spec.name} (unticked: none)",
        )
        self.slider.disabled = spec.default is None
        self.box = widgets.HBox([self.enabled, slider])
        self.enabled.observe(self._toggle, "value")

    def _toggle(self, change: Any) -> None:
        self.slider.disabled = not change["new"]

    @property
    def value(self) -> Any:
        return self.slider.value if self.enabled.value else None

    @value.setter
    def value(self, new: Any) -> None:
        if new is None:
            self.enabled.value = False
        else:
            self.slider.value = new
            self.enabled.value = True

    def observe(self, handler: Any) -> None:
        self.enabled.observe(handler, "value")
        self.slider.observe(handler, "value")


class Control:
    """One option's widget: ``value`` reads and sets the option; ``widget`` is displayed."""

    def __init__(self, spec: OptionSpec) -> None:
        import ipywidgets as widgets

        self.spec = spec
        style = {"description_width": "150px"}
        layout = widgets.Layout(width="340px")
        common = {"description": spec.name, "style": style, "tooltip": spec.help}
        self._optional: _Optional | None = None
        self._text = False
        if spec.kind == "bool":
            self._widget: Any = widgets.Checkbox(value=bool(spec.default), **common)
        elif spec.kind == "choice":
            self._widget = widgets.Dropdown(
                options=list(spec.choices), value=str(spec.default), layout=layout, **common
            )
        elif spec.kind in ("int", "float"):
            low, high = spec.slider_range()
            start = spec.default if spec.default is not None else _unset_start(spec, low, high)
            if spec.kind == "int":
                self._widget = widgets.IntSlider(
                    value=int(start),
                    min=math.floor(low),
                    max=math.ceil(high),
                    continuous_update=False,
                    layout=layout,
                    **common,
                )
            else:
                self._widget = widgets.FloatSlider(
                    value=float(start),
                    min=low,
                    max=high,
                    step=_step(low, high),
                    readout_format=".4g",
                    continuous_update=False,
                    layout=layout,
                    **common,
                )
            if spec.optional:
                self._optional = _Optional(widgets, self._widget, spec)
        else:
            self._text = True
            self._widget = widgets.Text(
                value=show_text(spec.default), continuous_update=False, layout=layout, **common
            )
        help_text = widgets.HTML(
            f"<span style='color:#666;font-size:75%;line-height:1.2'>{_escape(spec.help)}</span>",
            layout=widgets.Layout(width="200px"),
        )
        main = self._optional.box if self._optional is not None else self._widget
        self.widget = widgets.HBox([main, help_text])

    @property
    def value(self) -> Any:
        """The option's current value (None where an optional one is switched off)."""
        if self._optional is not None:
            return self._optional.value
        if self._text:
            return parse_text(self._widget.value, self.spec.default)
        return self._widget.value

    @value.setter
    def value(self, new: Any) -> None:
        if self._optional is not None:
            self._optional.value = new
        elif self._text:
            self._widget.value = show_text(new)
        else:
            self._widget.value = new

    @property
    def inner(self) -> Any:
        """The value widget itself (a slider, drop-down, checkbox or text box)."""
        return self._widget

    def observe(self, handler: Any) -> None:
        """Call ``handler(change)`` whenever the value changes."""
        if self._optional is not None:
            self._optional.observe(handler)
        else:
            self._widget.observe(handler, "value")


def make_control(spec: OptionSpec) -> Control:
    """Build the ipywidgets control of one option.

    Examples
    --------
    >>> from cogstats.gates import get_gate
    >>> control = make_control(option_specs(get_gate("cycgraph"), "gate")[1])
    >>> control.value, type(control.inner).__name__
    (3, 'IntSlider')
    >>> control.value = 5
    >>> control.value
    5
    """
    return Control(spec)


def _unset_start(spec: OptionSpec, low: float, high: float) -> float:
    """Where a switched-off optional slider sits: a round value inside its range."""
    if spec.kind == "int":
        return min(max(6.0, low), high)
    return low + (high - low) / 2


def _step(low: float, high: float) -> float:
    span = max(high - low, 1e-9)
    return float(10 ** math.floor(math.log10(span / 200)))


def _escape(text: str) -> str:
    import html

    return html.escape(text.replace("``", ""), quote=False)
