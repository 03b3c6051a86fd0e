"""The cost of a tiered run's model calls (docs/tiers.md).

**Write amplification** (:class:`CostModel`). Each checkpoint add (write or promote) is one extraction call
(distil the fact), one embedding call (index it) and one dedupe lookup (find its older version); each
checkpoint item a consolidation pass scans is one more dedupe lookup; a journal append costs no call
(triage is a rule). ``total_cost = bytes_written + sum(weight * calls)``, weights in byte-equivalents;
``amplification = total_cost / bytes_written``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Byte-equivalent weight of each model call (user-settable). Defaults: a convention, not a measurement
    -- an extraction (an LLM call reading the raw step) outweighs an embedding, which outweighs a lookup."""

    extraction: float = 256.0
    embedding: float = 64.0
    dedupe: float = 16.0

    def __post_init__(self):
        for name in ("extraction", "embedding", "dedupe"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ArgumentError(f"{arg('costs')} {name}: expected a finite number >= 0; got {value!r}")
