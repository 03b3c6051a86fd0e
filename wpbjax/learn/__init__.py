"""Learned write gates: online features, a differentiable relaxation of the store, optax training,
the hard ``learned_gate:PATH`` policy and a gymnax-style environment (see docs/learning.md)."""
