"""Package track: MEMAUDIT representation choice (docs/packages.md).

model: PackageBatch and the exact objective; generate / distributions / jax_gen: packages;
io: the artifact's export layout; opt: certified exact optima; writers: the artifact's writers;
sweep: (distribution, seed, budget, method) rows; cli: ``wpbjax packages ...``.
"""
