"""Defences of a shared vector memory against poisoned writes, as a registry.

A defence decides, for one :class:`~cogstats.admission.world.World`, which memories the
ANN index is built from, which it takes out afterwards, which results are dropped at
query time, and what the consolidation job reads: a :class:`Placement`.

* ``clean``: no poison is written (the baseline every recall is compared with).
* ``none``: everything written is indexed and served.
* ``read_filter``: everything written is indexed; at query time the index returns its
  ``k + overfetch`` best results and a filter drops the poisoned ones.  The filter is
  granted a perfect detector of poisoned *writes* (it never serves one), and it trusts
  the consolidator's summaries (their provenance is high).  The consolidation job reads
  the index, not the filtered results (``consolidate_filtered`` changes that).
* ``admission``: each write is decided before it is indexed (:func:`admission_decisions`):
  rejected when its provenance is below ``min_provenance``, when its cosine distance to
  its tenant's centroid is above ``max_centroid_distance``, or when it contradicts a
  high-provenance memory already in the store.  Everything downstream (index,
  consolidation) sees the admitted set only.
* ``quarantine``: for legacy data whose provenance cannot be re-validated: everything
  was indexed; afterwards the suspects (too far from the tenant centroid, or
  contradicting the validated corpus) are moved to a separate exact index outside ANN
  routing (HNSW rebuilt without them, IVF lists purged, the quantizer unchanged).

Contradiction is modelled explicitly: every memory carries a claim (subject, value); a
write contradicts when a high-provenance memory (provenance at least
``high_provenance``) within cosine distance ``duplicate_distance`` makes a claim about
the same subject with another value.  Admission decides writes in arrival order, in
batches of ``batch`` (a write is checked against what was admitted in earlier batches).
"""

from __future__ import annotations

import html
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, check_int, check_real
from cogstats.admission.registry import DEFENCES as _DEFENCES
from cogstats.admission.world import POISON, SEED, World

__all__ = [
    "DEFENCES",
    "REASONS",
    "Admission",
    "AdmissionDecisions",
    "AdmissionRules",
    "Clean",
    "Defence",
    "NoDefence",
    "Placement",
    "Quarantine",
    "QuarantineOptions",
    "ReadFilter",
    "ReadFilterOptions",
    "admission_decisions",
    "conflict_pairs",
    "get_defence",
    "make_defence",
    "register_defence",
]

#: why a write was rejected (the first rule it fails, in this order), or "admitted"
REASONS: tuple[str, ...] = ("admitted", "low_provenance", "off_centroid", "contradiction")


@dataclass(frozen=True)
class AdmissionRules:
    """The admission rules (the ``admission`` defence's options).

    Attributes
    ----------
    min_provenance : float
        Reject a write whose provenance score is below this.
    max_centroid_distance : float
        Reject a write whose cosine distance to its tenant's centroid is above this.
    high_provenance : float
        Memories at least this trusted are the ones a write must not contradict.
    duplicate_distance : float
        Two memories are near-duplicates (about the same thing) within this cosine
        distance; only a near-duplicate's claim can be contradicted.
    batch : int
        Writes decided together (checked against earlier batches).

    Examples
    --------
    >>> AdmissionRules(max_centroid_distance=0.3).min_provenance
    0.6
    """

    min_provenance: float = 0.6
    max_centroid_distance: float = 0.35
    high_provenance: float = 0.8
    duplicate_distance: float = 0.2
    batch: int = 256

    def __post_init__(self) -> None:
        """Check the thresholds."""
        check_real("min_provenance", self.min_provenance, minimum=0.0, maximum=1.0)
        check_real("max_centroid_distance", self.max_centroid_distance, minimum=0.0, maximum=2.0)
        check_real("high_provenance", self.high_provenance, minimum=0.0, maximum=1.0)
        check_real("duplicate_distance", self.duplicate_distance, minimum=0.0, maximum=2.0)
        check_int("batch", self.batch, minimum=1)


@dataclass(frozen=True)
class ReadFilterOptions:
    """Options of the ``read_filter`` defence.

    Attributes
    ----------
    overfetch : int
        Extra results fetched from the index per query before the filter drops the
        flagged ones (the caller still gets at most ``k``).
    consolidate_filtered : bool
        Run consolidation on what the filter lets through (default False: the job reads
        the index, as the field report found).

    Examples
    --------
    >>> make_defence("read_filter", ReadFilterOptions(overfetch=5)).options.overfetch
    5
    """

    overfetch: int = 0
    consolidate_filtered: bool = False

    def __post_init__(self) -> None:
        """Check the over-fetch."""
        check_int("overfetch", self.overfetch, minimum=0)


@dataclass(frozen=True)
class QuarantineOptions:
    """Options of the ``quarantine`` defence (no provenance rule: legacy data has none).

    Examples
    --------
    >>> QuarantineOptions().max_centroid_distance
    0.35
    """

    max_centroid_distance: float = 0.35
    high_provenance: float = 0.8
    duplicate_distance: float = 0.2

    def __post_init__(self) -> None:
        """Check the thresholds."""
        check_real("max_centroid_distance", self.max_centroid_distance, minimum=0.0, maximum=2.0)
        check_real("high_provenance", self.high_provenance, minimum=0.0, maximum=1.0)
        check_real("duplicate_distance", self.duplicate_distance, minimum=0.0, maximum=2.0)


@dataclass(frozen=True)
class _NoOptions:
    """Options of a defence that has none."""


@dataclass(frozen=True, repr=False, eq=False)
class AdmissionDecisions:
    """Which writes a set of rules rejects, and by which rule (arrays by memory id).

    Corpus memories are never judged (all flags False).  A write is admitted when no
    flag is set; ``reason`` names the first rule it fails.  Made by
    :func:`admission_decisions`.

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> world = generate_world(AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 2,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 3, "queries": 5}}), rng=4)
    >>> decisions = admission_decisions(world)
    >>> bool(decisions.admitted[world.is_seed].all()), decisions.to_frame().columns
    (True, ['origin', 'reason', 'writes', 'share'])
    """

    rules: Any
    low_provenance: np.ndarray
    off_centroid: np.ndarray
    contradiction: np.ndarray
    is_write: np.ndarray
    is_poison: np.ndarray

    @property
    def rejected(self) -> np.ndarray:
        """Writes failing at least one rule."""
        return self.low_provenance | self.off_centroid | self.contradiction

    @property
    def admitted(self) -> np.ndarray:
        """Memories in the store after admission (the corpus and the admitted writes)."""
        return ~self.rejected

    @property
    def reason(self) -> np.ndarray:
        """Reason code per memory (index into :data:`REASONS`)."""
        out = np.zeros(self.rejected.size, dtype=np.int8)
        out[self.contradiction] = 3
        out[self.off_centroid] = 2
        out[self.low_provenance] = 1
        return out

    @property
    def benign_rejection_rate(self) -> float:
        """Rejected benign writes over benign writes."""
        benign = self.is_write & ~self.is_poison
        return float(self.rejected[benign].mean()) if benign.any() else float("nan")

    @property
    def poison_admission_rate(self) -> float:
        """Admitted poisoned writes over poisoned writes (NaN when none was written)."""
        return float(self.admitted[self.is_poison].mean()) if self.is_poison.any() else float("nan")

    def to_frame(self) -> pl.DataFrame:
        """Count writes by origin (benign | poison) and reason, with shares."""
        origin = np.where(self.is_poison, "poison", "benign")[self.is_write]
        reason = np.array(REASONS, dtype=object)[self.reason[self.is_write]]
        frame = pl.DataFrame({"origin": origin.tolist(), "reason": reason.tolist()})
        return (
            frame.group_by("origin", "reason")
            .len("writes")
            .with_columns((pl.col("writes") / pl.col("writes").sum().over("origin")).alias("share"))
            .sort("origin", "reason")
        )

    def summary(self) -> str:
        """Benign rejection and poison admission rates, then the table."""
        return (
            f"AdmissionDecisions({format_settings(_settings(self.rules))}): benign rejection "
            f"{self.benign_rejection_rate:.4f}, poison admission {self.poison_admission_rate:.4f}\n"
            + frame_text(self.to_frame())
        )

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.summary()) + "</pre>"


def _settings(options: Any) -> dict[str, Any]:
    return {k: getattr(options, k) for k in getattr(options, "__dataclass_fields__", {})}


def conflict_pairs(world: World, duplicate_distance: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (earlier, later) of near-duplicate memories with conflicting claims.

    Two memories conflict when they are about the same subject, assert different
    values, and lie within ``duplicate_distance`` (cosine distance) of each other.
    Claims about different subjects never conflict, so the search runs subject by
    subject, exactly.

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 2,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 2, "queries": 5},
    ...     "poison": {"targeted_topics": 1, "subject_share": 1.0, "per_subject": [2, 2]}})
    >>> world = generate_world(spec, rng=3)
    >>> earlier, later = conflict_pairs(world, 0.2)
    >>> bool((earlier < later).all()), bool(world.is_poison[later].any())
    (True, True)
    """
    check_real("duplicate_distance", duplicate_distance, minimum=0.0, maximum=2.0)
    order = np.argsort(world.subject, kind="stable")
    bounds = np.flatnonzero(np.diff(world.subject[order])) + 1
    earlier, later = [], []
    for ids in np.split(order, bounds):
        values = world.value[ids]
        if values.min() == values.max():
            continue
        sims = world.vectors[ids] @ world.vectors[ids].T
        near = (sims >= 1.0 - duplicate_distance) & (values[:, None] != values[None, :])
        i, j = np.nonzero(np.triu(near, k=1))
        earlier.append(ids[i])
        later.append(ids[j])
    if not earlier:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    e, lt = np.concatenate(earlier), np.concatenate(later)
    return np.minimum(e, lt), np.maximum(e, lt)


def admission_decisions(
    world: World,
    rules: AdmissionRules | None = None,
    *,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> AdmissionDecisions:
    """Decide every write in arrival order with the three admission rules.

    Parameters
    ----------
    world : World
        The memory.
    rules : AdmissionRules, optional
        Thresholds (defaults: provenance 0.6, centroid distance 0.35).
    pairs : tuple of arrays, optional
        :func:`conflict_pairs` for ``rules.duplicate_distance``, when already computed
        (threshold sweeps reuse them).

    Returns
    -------
    AdmissionDecisions

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> world = generate_world(AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 3,
    ...     "topics_per_tenant": 3, "subjects_per_topic": 4, "queries": 10}}), rng=0)
    >>> decisions = admission_decisions(world)
    >>> decisions.benign_rejection_rate < 0.02, decisions.poison_admission_rate < 0.5
    (True, True)
    """
    rules = AdmissionRules() if rules is None else rules
    if not isinstance(rules, AdmissionRules):
        raise ParameterError(f"rules must be AdmissionRules; got {type(rules).__name__}")
    write = world.is_write
    low = write & (world.provenance < rules.min_provenance)
    off = write & (world.centroid_distance > rules.max_centroid_distance)
    earlier, later = conflict_pairs(world, rules.duplicate_distance) if pairs is None else pairs
    n_seed = int((world.origin == SEED).sum())
    batch_of = np.where(write, (np.arange(world.n) - n_seed) // rules.batch, -1)
    high = world.provenance >= rules.high_provenance
    passes = ~(low | off)
    contra = np.zeros(world.n, dtype=bool)
    admitted = ~write  # the corpus is in the store from the start
    order = np.argsort(batch_of[later], kind="stable")
    earlier, later = earlier[order], later[order]
    pair_batch = batch_of[later]
    n_batches = int(batch_of.max()) + 1 if write.any() else 0
    cuts = np.searchsorted(pair_batch, np.arange(n_batches + 1))
    for b in range(n_batches):
        i, j = earlier[cuts[b] : cuts[b + 1]], later[cuts[b] : cuts[b + 1]]
        hit = admitted[i] & high[i] & (batch_of[i] < b)
        contra[j[hit]] = True
        in_batch = batch_of == b
        admitted[in_batch] = passes[in_batch] & ~contra[in_batch]
    return AdmissionDecisions(
        rules=rules,
        low_provenance=low,
        off_centroid=off,
        contradiction=contra,
        is_write=write,
        is_poison=world.origin == POISON,
    )


@dataclass(frozen=True, repr=False, eq=False)
class Placement:
    """What one defence does with one world (boolean arrays by memory id).

    Attributes
    ----------
    defence : str
        Registry name.
    written : numpy.ndarray
        Memories written to the store at all (``clean`` writes no poison).
    build : numpy.ndarray
        Memories the ANN index is built from (an IVF quantizer is trained on them).
    removed : numpy.ndarray
        Memories taken out of the index after the build (quarantined).
    read_flagged : numpy.ndarray
        Memories dropped from results at query time.
    consolidation_input : numpy.ndarray
        Memories the consolidation job reads.
    overfetch : int
        Extra results fetched per query before the read-time filter.
    decisions : AdmissionDecisions or None
        The per-write decisions, for defences that make them.

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> world = generate_world(AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 2,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 3, "queries": 5}}), rng=4)
    >>> placement = make_defence("read_filter").place(world)
    >>> bool(placement.indexed.all()), bool((placement.read_flagged == world.is_poison).all())
    (True, True)
    """

    defence: str
    written: np.ndarray
    build: np.ndarray
    removed: np.ndarray
    read_flagged: np.ndarray
    consolidation_input: np.ndarray
    overfetch: int = 0
    decisions: AdmissionDecisions | None = None

    @property
    def indexed(self) -> np.ndarray:
        """Memories the index holds when queries arrive."""
        return self.build & ~self.removed

    @property
    def served(self) -> np.ndarray:
        """Memories a query can get back: indexed and not flagged."""
        return self.indexed & ~self.read_flagged


class Defence(ABC):
    """A defence: ``place(world) -> Placement``.  Subclasses set ``name`` and ``Options``.

    Register a new one with :func:`register_defence`; specs and the CLI then find it by
    name and read its options from ``[defence.<name>]``.

    Examples
    --------
    >>> class IndexBenignOnly(Defence):  # an oracle: index only what is not poisoned
    ...     name = "oracle_example"
    ...     def place(self, world):
    ...         return self._placement(world, build=world.is_benign)
    >>> IndexBenignOnly().options
    _NoOptions()
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Options: ClassVar[type] = _NoOptions

    def __init__(self, options: Any = None) -> None:
        if options is None:
            options = self.Options()
        if not isinstance(options, self.Options):
            raise ParameterError(
                f"options of defence {self.name!r} must be {self.Options.__name__}; "
                f"got {type(options).__name__}"
            )
        self.options: Any = options

    @abstractmethod
    def place(self, world: World) -> Placement:
        """Decide what to index, remove, filter and consolidate in ``world``."""

    def _placement(self, world: World, **masks: Any) -> Placement:
        none = np.zeros(world.n, dtype=bool)
        written = masks.pop("written", np.ones(world.n, dtype=bool))
        build = masks.pop("build", written)
        removed = masks.pop("removed", none)
        return Placement(
            defence=self.name,
            written=written,
            build=build,
            removed=removed,
            read_flagged=masks.pop("read_flagged", none),
            consolidation_input=masks.pop("consolidation_input", build & ~removed),
            **masks,
        )


#: The registry: defence name -> class (a :class:`~cogstats._registry.Registry`, in the
#: order registered: from no defence to the strongest).
#: (:data:`cogstats.admission.registry.DEFENCES`, below the spec that checks names.)
DEFENCES = _DEFENCES


def register_defence(cls: type[Defence]) -> type[Defence]:
    """Class decorator adding a defence to :data:`DEFENCES` under ``cls.name``.

    Examples
    --------
    >>> @register_defence
    ... class Oracle(Defence):
    ...     name = "oracle_doc"
    ...     def place(self, world):
    ...         return self._placement(world, build=world.is_benign)
    >>> get_defence("oracle_doc") is Oracle
    True
    >>> del DEFENCES["oracle_doc"]  # (keep the registry as shipped)
    """
    # names() lists what is registered so far (the built-in module loading now included)
    if not cls.name or cls.name in DEFENCES.names():
        raise RuntimeError(f"defence {cls.name!r} registered twice or without a name")
    return DEFENCES.add(cls.name, cls)


def get_defence(name: str) -> type[Defence]:
    """Return the defence class registered as ``name``.

    Examples
    --------
    >>> get_defence("read_filter").__name__
    'ReadFilter'
    >>> get_defence("admision")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: defence must be one of [...]; got 'admision' (did you...
    """
    return DEFENCES.lookup(name)


def make_defence(name: str, options: Any = None) -> Defence:
    """Build the defence registered as ``name`` (default options when None).

    Examples
    --------
    >>> make_defence("admission", AdmissionRules(min_provenance=0.7)).options.min_provenance
    0.7
    """
    return get_defence(name)(options)


@register_defence
class Clean(Defence):
    """No poison is written: the baseline.

    Examples
    --------
    >>> get_defence("clean") is Clean
    True
    """

    name = "clean"
    description = "no poisoned write reaches the store (baseline)"

    def place(self, world: World) -> Placement:
        """Index the benign memories only: no poison is written."""
        return self._placement(world, written=world.is_benign)


@register_defence
class NoDefence(Defence):
    """Everything written is indexed and served.

    Examples
    --------
    >>> get_defence("none") is NoDefence
    True
    """

    name = "none"
    description = "everything is indexed and served"

    def place(self, world: World) -> Placement:
        """Index everything written, serve everything."""
        return self._placement(world)


@register_defence
class ReadFilter(Defence):
    """Everything is indexed; poisoned writes are dropped from results at query time.

    Examples
    --------
    >>> get_defence("read_filter") is ReadFilter
    True
    """

    name = "read_filter"
    description = "everything is indexed; flagged results are dropped at query time"
    Options = ReadFilterOptions

    def place(self, world: World) -> Placement:
        """Index everything written; drop poisoned results at read time."""
        o: ReadFilterOptions = self.options
        flagged = world.is_poison
        everything = np.ones(world.n, dtype=bool)
        return self._placement(
            world,
            read_flagged=flagged,
            consolidation_input=~flagged if o.consolidate_filtered else everything,
            overfetch=o.overfetch,
        )


@register_defence
class Admission(Defence):
    """Writes are decided before indexing; every consumer reads the admitted set.

    Examples
    --------
    >>> get_defence("admission") is Admission
    True
    """

    name = "admission"
    description = "reject before indexing: provenance, centroid distance, contradiction"
    Options = AdmissionRules

    def place(self, world: World) -> Placement:
        """Index the corpus and the writes the admission rules admit."""
        decisions = admission_decisions(world, self.options)
        return self._placement(world, build=decisions.admitted, decisions=decisions)


@register_defence
class Quarantine(Defence):
    """Suspects are moved out of the ANN index into a separate exact store afterwards.

    Examples
    --------
    >>> get_defence("quarantine") is Quarantine
    True
    """

    name = "quarantine"
    description = "index everything, then move suspects to a quarantine index outside routing"
    Options = QuarantineOptions

    def place(self, world: World) -> Placement:
        """Index everything, then move the suspects to an index outside routing."""
        o: QuarantineOptions = self.options
        rules = AdmissionRules(
            min_provenance=0.0,
            max_centroid_distance=o.max_centroid_distance,
            high_provenance=o.high_provenance,
            duplicate_distance=o.duplicate_distance,
        )
        write = world.is_write
        off = write & (world.centroid_distance > o.max_centroid_distance)
        earlier, later = conflict_pairs(world, o.duplicate_distance)
        validated = world.is_seed[earlier] & (world.provenance[earlier] >= o.high_provenance)
        contra = np.zeros(world.n, dtype=bool)
        contra[later[validated]] = True
        contra &= write
        decisions = AdmissionDecisions(
            rules=rules,
            low_provenance=np.zeros(world.n, dtype=bool),
            off_centroid=off,
            contradiction=contra,
            is_write=write,
            is_poison=world.is_poison,
        )
        return self._placement(world, removed=decisions.rejected, decisions=decisions)
