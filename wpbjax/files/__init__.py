"""Base (layer 0): files written atomically, results files and their sidecar, the output lock, resume, saved weights (weights.py)."""
