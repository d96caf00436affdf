"""The one place that turns an ``rng`` argument into numpy's random objects.

Every public function takes one keyword-only ``rng`` (an int seed, a
``numpy.random.Generator``, a ``SeedSequence`` or None) and passes it through
``numpy.random.default_rng`` (SPEC 7).  The estimators need the generator and the seed to
report; the simulator needs a ``SeedSequence`` to spawn per-cell streams from.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from cogstats._validation import ParameterError

__all__ = ["as_seed_sequence", "generator_with_seed", "seed_of"]


def seed_of(rng: Any, generator: np.random.Generator | None = None) -> int | None:
    """Return the integer seed to report for ``rng``, or None when there is none.

    An int is its own seed; a generator seeded from an int ``SeedSequence`` reports that
    entropy.

    Examples
    --------
    >>> seed_of(7), seed_of(None), seed_of(True)
    (7, None, None)
    >>> seed_of(None, np.random.default_rng(11))
    11
    """
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return int(rng)
    gen = rng if isinstance(rng, np.random.Generator) else generator
    if gen is None:
        return None
    seq = getattr(gen.bit_generator, "seed_seq", None)
    if isinstance(seq, np.random.SeedSequence) and isinstance(seq.entropy, int):
        return int(seq.entropy)
    return None


def generator_with_seed(rng: Any) -> tuple[np.random.Generator, int | None, dict[str, Any]]:
    """``default_rng(rng)``, the seed to report and the starting state of the stream.

    A generator passed in is used as is (not copied), so the caller's stream advances.

    Examples
    --------
    >>> gen, seed, state = generator_with_seed(3)
    >>> seed, sorted(state)
    (3, ['bit_generator'])
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    state = dict(gen.bit_generator.state)
    return gen, seed_of(rng, gen), {"bit_generator": state}


def as_seed_sequence(rng: Any) -> np.random.SeedSequence:
    """Make a SeedSequence from an int, a SeedSequence, a Generator or None (fresh entropy).

    Examples
    --------
    >>> as_seed_sequence(5).entropy
    5
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if rng is None or isinstance(rng, int | np.integer):
        if isinstance(rng, bool):
            raise ParameterError(
                f"rng must be an int, SeedSequence, Generator or None; got {rng!r}"
            )
        return np.random.SeedSequence(None if rng is None else int(rng))
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4, dtype=np.uint64).tolist())
    raise ParameterError(
        f"rng must be an int, numpy SeedSequence, Generator or None; got {type(rng).__name__}"
    )
