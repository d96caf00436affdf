"""The admission experiment's spec: frozen dataclasses, loadable from TOML, checked at the door.

An :class:`AdmissionSpec` describes a simulated shared vector memory (tenants, topics,
subjects, the validated corpus, benign writes, a poisoning campaign), the defences and
index types to compare, their options, the consolidation job, the admission-threshold
sweep (ROC) and the recall monitor's experiment.  ``simulations/write_path_admission.toml``
holds the shipped one, with its assumptions stated beside each value.  Every error names
the key (as a dotted path) and the file.

TOML layout (every table optional)::

    name = "write-path-admission"
    replicates = 20
    seed = 1
    k = 10
    defences = ["clean", "none", "read_filter", "admission", "quarantine"]
    indexes = ["hnsw", "ivf"]
    [world]                     # dim, tenants, topics_per_tenant, ..., queries
    [world.seed_provenance]     # a, b of a Beta distribution
    [benign]                    # writes_per_subject, disagreement_rate
    [benign.provenance]         # a, b
    [poison]                    # targeted_topics, subject_share, per_subject, spread
    [poison.cross_tenant]       # weight, offset = [low, high]; [.provenance] a, b
    [poison.off_centroid]       # weight, offset = [low, high]; [.provenance] a, b
    [defence.<name>]            # the options of a registered defence
    [index.<name>]              # the options of a registered index type
    [consolidation]             # cluster_size, min_members, provenance, laundering_share
    [roc]                       # min_provenance = [...], max_centroid_distance = [...]
    [monitor]                   # index, defence, periods, warmup, onset, ..., replicates
"""

from __future__ import annotations

import copy
import dataclasses
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cogstats._toml import TomlTable, read_toml
from cogstats._validation import CogstatsError, SpecError, suggest

__all__ = [
    "AdmissionSpec",
    "BenignSpec",
    "Beta",
    "ConsolidationSpec",
    "MonitorSpec",
    "PoisonKind",
    "PoisonSpec",
    "RocSpec",
    "WorldSpec",
    "load_admission_spec",
]


#: the typed reader of a spec table (shared with the simulation and sweep specs)
_Table = TomlTable


@dataclass(frozen=True)
class Beta:
    """A Beta(a, b) distribution of provenance scores in (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> Beta(16, 2).mean
    0.8888888888888888
    >>> Beta(16, 2).draw(np.random.default_rng(0), 3).shape
    (3,)
    """

    a: float
    b: float

    @property
    def mean(self) -> float:
        """A / (a + b)."""
        return self.a / (self.a + self.b)

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws."""
        return rng.beta(self.a, self.b, size)

    @classmethod
    def parse(cls, t: _Table, default: Beta) -> Beta:
        """Read a Beta(a, b) table, ``default`` for what it leaves out."""
        out = cls(t.number("a", default.a, positive=True), t.number("b", default.b, positive=True))
        t.done()
        return out


@dataclass(frozen=True)
class WorldSpec:
    """The memory's geometry: tenants, topics and subjects as nested clusters on the sphere.

    Every point is ``unit(parent + spread * g)`` with ``g ~ N(0, I / dim)`` (about unit
    length): a tenant's centroid around a shared domain direction (``tenant_spread``), a
    topic around its tenant (``topic_spread``), a subject around its topic
    (``subject_spread``), a memory or query about a subject around the subject
    (``memory_spread``, ``query_spread``).  The validated corpus holds
    ``seed_per_subject`` memories per subject, with provenance from ``seed_provenance``.

    Examples
    --------
    >>> WorldSpec().subjects
    512
    """

    dim: int = 128
    tenants: int = 8
    topics_per_tenant: int = 8
    subjects_per_topic: int = 8
    tenant_spread: float = 1.0
    topic_spread: float = 0.5
    subject_spread: float = 0.4
    memory_spread: float = 0.4
    query_spread: float = 0.4
    seed_per_subject: int = 6
    seed_provenance: Beta = Beta(40.0, 2.0)
    queries: int = 2000

    @property
    def topics(self) -> int:
        """Topics in the memory (regions)."""
        return self.tenants * self.topics_per_tenant

    @property
    def subjects(self) -> int:
        """Subjects in the memory."""
        return self.topics * self.subjects_per_topic


@dataclass(frozen=True)
class BenignSpec:
    """Benign writes: Poisson(``writes_per_subject``) per subject, in random order.

    ``disagreement_rate`` is the share of benign writes whose claim differs from the
    store's (a correction or a mistake): the contradiction rule rejects them.

    Examples
    --------
    >>> BenignSpec().provenance.mean
    0.8888888888888888
    """

    writes_per_subject: float = 14.0
    provenance: Beta = Beta(16.0, 2.0)
    disagreement_rate: float = 0.001


@dataclass(frozen=True)
class PoisonKind:
    """One kind of poisoned write: its share, provenance and offset from the target subject.

    A poisoned write is ``unit(subject + spread * g + offset * r)``, ``r`` a unit direction
    orthogonal to the writer tenant's centroid and ``offset ~ U(low, high)``.

    Examples
    --------
    >>> PoisonSpec().off_centroid.offset
    (0.3, 1.2)
    """

    weight: float
    provenance: Beta
    offset: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class PoisonSpec:
    """The poisoning campaign.

    ``targeted_topics`` topics are drawn at random; each of their subjects is targeted
    with probability ``subject_share`` and receives ``per_subject`` = [min, max]
    (uniform) poisoned writes claiming a false value.  ``cross_tenant`` writes come from
    another tenant's account, placed at the target subject; ``off_centroid`` writes come
    from the target's own tenant (a compromised connector) with a payload that pulls the
    embedding off the tenant's centroid.  Poisoned writes arrive at random times in the
    write stream.

    Examples
    --------
    >>> PoisonSpec().per_subject
    (1, 4)
    """

    targeted_topics: int = 4
    subject_share: float = 0.5
    per_subject: tuple[int, int] = (1, 4)
    spread: float = 0.2
    cross_tenant: PoisonKind = PoisonKind(0.5, Beta(4.0, 4.0), (0.0, 0.0))
    off_centroid: PoisonKind = PoisonKind(0.5, Beta(9.0, 3.0), (0.3, 1.2))


@dataclass(frozen=True)
class ConsolidationSpec:
    """The consolidation job (see :mod:`cogstats.admission.consolidation`)."""

    cluster_size: int = 16
    min_members: int = 4
    provenance: float = 0.95
    laundering_share: float = 0.1
    iterations: int = 10


@dataclass(frozen=True)
class RocSpec:
    """Thresholds swept (one rule at a time, the others at the admission defaults)."""

    min_provenance: tuple[float, ...] = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    max_centroid_distance: tuple[float, ...] = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1.0, 2.0)


@dataclass(frozen=True)
class MonitorSpec:
    """The recall monitor's experiment (see :mod:`cogstats.admission.monitor`).

    The write stream is cut into ``periods``; the poisoned writes arrive in periods
    ``onset`` .. ``onset + attack_periods - 1`` and the rest of the time only benign
    writes.  After every period each region (topic) gets ``probes_per_region`` fresh
    benign probe queries, checked against exact search.  The monitor learns each region's
    share of degraded probes (recall below 1) in the first ``warmup`` periods, then runs
    one CUSUM per region tuned to a rise of ``shift`` in that share, with thresholds such
    that the first alarm over all regions comes after ``arl0`` periods on average when
    nothing changes.

    Examples
    --------
    >>> ConsolidationSpec().laundering_share
    0.1

    Examples
    --------
    >>> RocSpec().min_provenance[:3]
    (0.0, 0.2, 0.4)

    Examples
    --------
    >>> MonitorSpec().arl0
    500.0
    """

    index: str = "hnsw"
    defence: str = "read_filter"
    periods: int = 40
    warmup: int = 10
    onset: int = 20
    attack_periods: int = 5
    probes_per_region: int = 8
    shift: float = 0.1
    arl0: float = 500.0
    replicates: int = 20


@dataclass(frozen=True)
class AdmissionSpec:
    """Everything one run of the admission experiment needs.

    Build with :meth:`from_dict` or :func:`load_admission_spec`; change values with
    :meth:`with_values`.

    Examples
    --------
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64}, "replicates": 3})
    >>> spec.world.dim, spec.replicates, spec.defence_options["admission"].min_provenance
    (64, 3, 0.6)
    >>> spec.with_values({"defence.admission.min_provenance": 0.5}).defence_options[
    ...     "admission"].min_provenance
    0.5
    """

    name: str = "write-path-admission"
    description: str = ""
    replicates: int = 20
    seed: int = 0
    k: int = 10
    defences: tuple[str, ...] = ("clean", "none", "read_filter", "admission", "quarantine")
    indexes: tuple[str, ...] = ("hnsw", "ivf")
    world: WorldSpec = WorldSpec()
    benign: BenignSpec = BenignSpec()
    poison: PoisonSpec = PoisonSpec()
    consolidation: ConsolidationSpec = ConsolidationSpec()
    roc: RocSpec = RocSpec()
    monitor: MonitorSpec = MonitorSpec()
    defence_options: Mapping[str, Any] = field(default_factory=dict)
    index_options: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None

    def __post_init__(self) -> None:
        """Fill in the options of every registered defence and index type."""
        # every registered defence and index type has options (defaults unless given)
        from cogstats.admission.registry import DEFENCES, INDEXES

        for attr, registry in (("defence_options", DEFENCES), ("index_options", INDEXES)):
            given = dict(getattr(self, attr))
            full = {name: given.get(name) or cls.Options() for name, cls in registry.items()}
            object.__setattr__(self, attr, full)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> AdmissionSpec:
        """Validate a spec mapping (as read from TOML); errors name the key and the file."""
        from cogstats.admission.registry import DEFENCES, INDEXES

        r = _Table(data, "", source)
        name = r.string("name", "write-path-admission", empty=True)
        description = r.string("description", "", empty=True)
        replicates = r.integer("replicates", 20, minimum=1)
        seed = r.integer("seed", 0, minimum=0)
        k = r.integer("k", 10, minimum=1)
        defences = r.choices("defences", cls.defences, list(DEFENCES))
        indexes = r.choices("indexes", cls.indexes, list(INDEXES))
        if "clean" not in defences:
            raise r.error("defences", "must include 'clean' (recall loss is measured against it)")
        world = _parse_world(r.table("world"))
        benign = _parse_benign(r.table("benign"))
        poison = _parse_poison(r.table("poison"), world)
        consolidation = _parse_consolidation(r.table("consolidation"))
        roc_t = r.table("roc")
        roc = RocSpec(
            roc_t.numbers("min_provenance", RocSpec.min_provenance, minimum=0.0, maximum=1.0),
            roc_t.numbers(
                "max_centroid_distance", RocSpec.max_centroid_distance, minimum=0.0, maximum=2.0
            ),
        )
        roc_t.done()
        monitor = _parse_monitor(r.table("monitor"), list(DEFENCES), list(INDEXES))
        defence_options = _parse_options(r.table("defence"), DEFENCES)
        index_options = _parse_options(r.table("index"), INDEXES)
        r.done()
        if k > world.subjects * world.seed_per_subject:
            raise r.error("k", f"must not exceed the corpus size; got {k}")
        return cls(
            name=name,
            description=description,
            replicates=replicates,
            seed=seed,
            k=k,
            defences=defences,
            indexes=indexes,
            world=world,
            benign=benign,
            poison=poison,
            consolidation=consolidation,
            roc=roc,
            monitor=monitor,
            defence_options=defence_options,
            index_options=index_options,
            source=source,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as a mapping that round-trips through :meth:`from_dict`."""

        def plain(obj: Any) -> Any:
            if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
                return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
            if isinstance(obj, tuple):
                return [plain(v) for v in obj]
            return obj

        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "replicates": self.replicates,
            "seed": self.seed,
            "k": self.k,
            "defences": list(self.defences),
            "indexes": list(self.indexes),
            "world": plain(self.world),
            "benign": plain(self.benign),
            "poison": plain(self.poison),
            "consolidation": plain(self.consolidation),
            "roc": plain(self.roc),
            "monitor": plain(self.monitor),
            "defence": {n: plain(o) for n, o in self.defence_options.items()},
            "index": {n: plain(o) for n, o in self.index_options.items()},
        }
        return out

    def with_values(self, values: Mapping[str, Any]) -> AdmissionSpec:
        """Return a copy with dotted-path values replaced (``{"world.dim": 64}``), checked."""
        data = self.to_dict()
        for path, value in values.items():
            node: Any = data
            parts = str(path).split(".")
            for part in parts[:-1]:
                if not isinstance(node, dict) or part not in node:
                    raise SpecError("names no table of the spec", key=str(path), source=self.source)
                node = node[part]
            if not isinstance(node, dict) or parts[-1] not in node:
                raise SpecError("names no value of the spec", key=str(path), source=self.source)
            node[parts[-1]] = copy.deepcopy(value)
        return AdmissionSpec.from_dict(data, source=self.source)

    def rules(self) -> Any:
        """Return the admission rules (the ``admission`` defence's options)."""
        return self.defence_options["admission"]


def _parse_world(t: _Table) -> WorldSpec:
    d = WorldSpec()
    w = WorldSpec(
        dim=t.integer("dim", d.dim, minimum=64, maximum=384),
        tenants=t.integer("tenants", d.tenants, minimum=2),
        topics_per_tenant=t.integer("topics_per_tenant", d.topics_per_tenant, minimum=1),
        subjects_per_topic=t.integer("subjects_per_topic", d.subjects_per_topic, minimum=1),
        tenant_spread=t.number("tenant_spread", d.tenant_spread, minimum=0.0),
        topic_spread=t.number("topic_spread", d.topic_spread, minimum=0.0),
        subject_spread=t.number("subject_spread", d.subject_spread, minimum=0.0),
        memory_spread=t.number("memory_spread", d.memory_spread, minimum=0.0),
        query_spread=t.number("query_spread", d.query_spread, minimum=0.0),
        seed_per_subject=t.integer("seed_per_subject", d.seed_per_subject, minimum=1),
        seed_provenance=Beta.parse(t.table("seed_provenance"), d.seed_provenance),
        queries=t.integer("queries", d.queries, minimum=1),
    )
    t.done()
    return w


def _parse_benign(t: _Table) -> BenignSpec:
    d = BenignSpec()
    b = BenignSpec(
        writes_per_subject=t.number("writes_per_subject", d.writes_per_subject, minimum=0.0),
        provenance=Beta.parse(t.table("provenance"), d.provenance),
        disagreement_rate=t.number("disagreement_rate", d.disagreement_rate, minimum=0, maximum=1),
    )
    t.done()
    return b


def _parse_kind(t: _Table, default: PoisonKind) -> PoisonKind:
    kind = PoisonKind(
        weight=t.number("weight", default.weight, minimum=0.0),
        provenance=Beta.parse(t.table("provenance"), default.provenance),
        offset=t.interval("offset", default.offset),
    )
    t.done()
    return kind


def _parse_poison(t: _Table, world: WorldSpec) -> PoisonSpec:
    d = PoisonSpec()
    targeted = t.integer("targeted_topics", d.targeted_topics, minimum=0, maximum=world.topics)
    share = t.number("subject_share", d.subject_share, minimum=0.0, maximum=1.0)
    per = t.get("per_subject", list(d.per_subject))
    if (
        not isinstance(per, list)
        or len(per) != 2
        or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in per)
        or not 0 <= per[0] <= per[1]
    ):
        raise t.error("per_subject", f"must be [min, max] integers, 0 <= min <= max; got {per!r}")
    spread = t.number("spread", d.spread, minimum=0.0)
    cross = _parse_kind(t.table("cross_tenant"), d.cross_tenant)
    off = _parse_kind(t.table("off_centroid"), d.off_centroid)
    if cross.weight + off.weight <= 0:
        raise t.error("cross_tenant.weight", "the two kinds' weights must not both be 0")
    t.done()
    return PoisonSpec(targeted, share, (int(per[0]), int(per[1])), spread, cross, off)


def _parse_consolidation(t: _Table) -> ConsolidationSpec:
    d = ConsolidationSpec()
    c = ConsolidationSpec(
        cluster_size=t.integer("cluster_size", d.cluster_size, minimum=1),
        min_members=t.integer("min_members", d.min_members, minimum=1),
        provenance=t.number("provenance", d.provenance, minimum=0.0, maximum=1.0),
        laundering_share=t.number("laundering_share", d.laundering_share, minimum=0, maximum=1),
        iterations=t.integer("iterations", d.iterations, minimum=1),
    )
    if c.laundering_share <= 0:
        raise t.error("laundering_share", f"must be > 0; got {c.laundering_share!r}")
    t.done()
    return c


def _parse_monitor(t: _Table, defences: list[str], indexes: list[str]) -> MonitorSpec:
    d = MonitorSpec()
    m = MonitorSpec(
        index=t.choice("index", d.index, sorted(indexes)),
        defence=t.choice("defence", d.defence, sorted(defences)),
        periods=t.integer("periods", d.periods, minimum=2),
        warmup=t.integer("warmup", d.warmup, minimum=2),
        onset=t.integer("onset", d.onset, minimum=1),
        attack_periods=t.integer("attack_periods", d.attack_periods, minimum=1),
        probes_per_region=t.integer("probes_per_region", d.probes_per_region, minimum=1),
        shift=t.number("shift", d.shift, positive=True, maximum=0.9),
        arl0=t.number("arl0", d.arl0, minimum=1.0),
        replicates=t.integer("replicates", d.replicates, minimum=1),
    )
    if not m.warmup <= m.onset < m.periods:
        raise t.error(
            "onset",
            f"must satisfy warmup <= onset < periods ({m.warmup}, {m.periods}); got {m.onset}",
        )
    t.done()
    return m


def _parse_options(t: _Table, registry: Mapping[str, Any]) -> dict[str, Any]:
    """Each registered part's options dataclass, from ``[<table>.<name>]`` (defaults else)."""
    out: dict[str, Any] = {}
    for name in t.data:
        if name not in registry:
            raise t.error(
                name,
                f"names no registered part{suggest(name, registry)}; allowed: {sorted(registry)}",
            )
    for name, cls in registry.items():
        options_cls = cls.Options
        sub = t.table(name)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(options_cls):
            default = f.default
            if isinstance(default, bool):
                values[f.name] = sub.boolean(f.name, default)
            elif isinstance(default, int):
                values[f.name] = sub.integer(f.name, default)
            else:
                values[f.name] = sub.number(f.name, float(default))  # type: ignore[arg-type]
        sub.done()
        try:
            out[name] = options_cls(**values)
        except CogstatsError as exc:  # the options' own checks name the parameter
            raise SpecError(str(exc), key=sub.path, source=t.source) from None
    return out


def load_admission_spec(path: str | Path) -> AdmissionSpec:
    r"""Read an admission spec (TOML) and validate it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.toml"
    >>> _ = p.write_text("replicates = 2\n[world]\ndim = 64\n")
    >>> load_admission_spec(p).world.dim
    64
    >>> _ = p.write_text("[world]\ndimension = 64\n")
    >>> load_admission_spec(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: ...a.toml, key 'world.dimension': unknown key...
    """
    path = Path(path)
    return AdmissionSpec.from_dict(read_toml(path), source=str(path))
