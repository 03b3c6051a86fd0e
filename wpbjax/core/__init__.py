"""The engine (layer 3): one run's scan, batched rollouts, long episodes in segments, tiered runs."""
