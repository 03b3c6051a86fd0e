"""EpisodeBatch: a batch of episodes as fixed-shape arrays, one track's view of them.

Shapes: N episodes, T steps (padded; ``valid`` marks real steps), F field slots (one per
distinct non-``api`` key of the batch's dict observations), R priority levels (distinct values),
A distinct apis (the most in one episode).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EpisodeBatch:
    """What the engine sees of a batch of episodes, for one track.

    Leading axes are ``[N, T]``; ``vmap`` over the episode axis gives the per-episode view
    the policies and the store work on (same fields, one axis fewer).
    """

    valid: jax.Array           # [N, T] bool   real step (False on padding)
    step_t: jax.Array          # [N, T] int32  the step's own ``t``
    write_cost: jax.Array      # [N, T] int32  bytes of a WRITE under this track's view (SEMANTICS §2)
    api_id: jax.Array          # [N, T] int32  id of obs["api"] under Python equality; -1 if absent/null/not a dict
    api_is_str: jax.Array      # [N, T] bool   obs["api"] is a string (scoring of deltas, §4)
    api_index: jax.Array       # [N, T] int32  the api's index among the episode's distinct apis (-1 as api_id)
    api_ids: jax.Array         # [N, A] int32  api_id of each index (-1 padding); A = most apis in one episode
    field_value: jax.Array     # [N, T, F] int32 id of obs[key_f] under Python equality; id(None) when absent
    field_present: jax.Array   # [N, T, F] bool  key_f is a key of obs (a dict)
    field_frag_len: jax.Array  # [N, T, F] int32 len of '"key": value' in a delta (merge cost, §2)
    priority: jax.Array        # [N, T] float32 metadata priority, rounded *up* to float32 (0 if hidden)
    priority_rank: jax.Array   # [N, T] int32  dense rank of the exact float64 priority among the batch's levels
    priority_levels: jax.Array # [N, R] float32 the batch's distinct priorities (0.0 included), ascending, rounded up
    zero_rank: jax.Array       # [N] int32     rank of priority 0.0 (missing, hidden and delta items rank here)
    utility: jax.Array         # [N, T] float32 u_t (hidden from non-oracle policies by convention)
    critical: jax.Array        # [N, T] bool   t is in critical_steps
    t_last: jax.Array          # [N] int32     the last real step's t
    length: jax.Array          # [N] int32     number of real steps
    # What an observer reads of a string api "<...>.v<k>.<...>" (wpbjax.learn's gates use them;
    # None where an episode source does not provide them):
    endpoint_index: jax.Array | None = None  # [N, T] int32 per-episode index of the api with its
                                              #   version segment removed (-1: no string api)
    version_number: jax.Array | None = None  # [N, T] int32 k of that segment (else an int obs["version"], else 0)

    @property
    def n_episodes(self) -> int:
        return self.valid.shape[0]

    @property
    def n_steps(self) -> int:
        return self.valid.shape[-1]

    def take(self, indices) -> "EpisodeBatch":
        """The sub-batch of the given episode indices (host-side helper)."""
        return jax.tree_util.tree_map(lambda leaf: leaf[jnp.asarray(indices)], self)
