"""Shaping what XLA:CPU fuses: a value computed once, in its own kernel, for every kernel that reads it.

XLA:CPU fuses a cheap computation (compares, selects, adds) into every kernel that reads its result, so a
policy's decision read by several of the store's updates is computed again inside each of them
(docs/performance.md, "Slow policies"). An integer division by a value XLA cannot prove constant counts as
expensive, and XLA does not copy an expensive instruction into several consumers: it computes it once and
its consumers read the result. ``optimization_barrier`` does not do this on CPU (it is removed before fusion).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def computed_once(tree, nonnegative):
    """``tree`` unchanged, each integer or bool leaf computed once (see the module note).

    ``nonnegative``: a traced int32 array that is never negative at run time (a budget): it makes the
    divisor, 1 at run time, a value XLA cannot fold. Shapes: any; leaves keep theirs."""
    one = 1 + (nonnegative < 0).astype(jnp.int32)

    def once(leaf):
        if leaf.dtype == jnp.bool_:
            return jax.lax.div(leaf.astype(jnp.int32), one) != 0
        if jnp.issubdtype(leaf.dtype, jnp.integer):
            return jax.lax.div(leaf, one.astype(leaf.dtype))
        return leaf

    return jax.tree_util.tree_map(once, tree)
