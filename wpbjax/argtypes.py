"""Argument types shared by the command-line parsers (``wpbjax ...`` and ``wpbjax packages ...``):
each turns one flag's text into its value or raises argparse's one-line error."""
from __future__ import annotations

import argparse


def int_list(text: str, minimum: int | None = None) -> list[int]:
    """Comma-separated integers, at least one (each >= ``minimum`` when given)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or (minimum is not None and min(values) < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise argparse.ArgumentTypeError(f"expected at least one integer{bound}")
    return values


def name_list(text: str) -> list[str]:
    """Comma-separated names, at least one."""
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError("expected at least one name")
    return values
