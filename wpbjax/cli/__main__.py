"""``python -m wpbjax.cli ...``: the ``wpbjax`` command (tests and experiments start it this way)."""

from wpbjax.cli import run

run()
