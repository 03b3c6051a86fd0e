"""Package track: MEMAUDIT representation choice (docs/packages.md).

model: PackageBatch and the exact objective F; catalog: names; memaudit_gen (memaudit_small), stress
(the artifact's stress distributions), jax_gen (random packages drawn in JAX), distributions
(dispatch); io: the artifact's export layout; opt (brute force), bnb (branch and bound), milp
(HiGHS): certified exact optima; writers: the artifact's writers as batched JAX programs; sweeps:
rows per (distribution, seed, budget, method); learned / external: trained writers and external stores.
The ``wpbjax packages ...`` commands live in :mod:`wpbjax.cli.packages_cmd`.
"""
