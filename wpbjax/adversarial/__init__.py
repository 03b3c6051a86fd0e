"""The adversary: each policy's worst regime, found by a vectorized search over the JAX generator's knobs
(docs/adversarial.md). ``knobs`` (the space), ``evaluate`` (one compiled call per generation), ``search``."""
