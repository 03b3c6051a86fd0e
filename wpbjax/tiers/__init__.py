"""Tiers (docs/tiers.md): a journal beside the checkpoint, each with its own byte budget -- one feature, one folder.

``actions`` (what a tier policy emits) < ``store`` (every tier rule) < ``policies`` (the tier policies and their
line-up) < ``engine`` (a tiered run: crashes, the compute budget) < ``rows`` (history, reads and costs as
results columns); ``costs`` is the model calls' byte-equivalent weights. A tiered sweep is a sweep like any
other (``wj.sweep(tiers=wj.Tiers(...))``): :mod:`wpbjax.sweeps` plans, chunks, writes and resumes it.
"""
