"""Argument types shared by the command-line parsers (``wpbjax ...`` and ``wpbjax packages ...``):
each turns one flag's text into its value or raises argparse's one-line error."""

from __future__ import annotations

import argparse


def int_list(text: str, minimum: int | None = None, maximum: int | None = None) -> list[int]:
    """Comma-separated integers, at least one (each >= ``minimum`` and <= ``maximum`` when given)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or (minimum is not None and min(values) < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise argparse.ArgumentTypeError(f"expected at least one integer{bound}")
    if maximum is not None and max(values) > maximum:
        raise argparse.ArgumentTypeError(f"expected integers <= {maximum:,}, got {max(values)}")
    return values


def count_list(text: str) -> list[int]:
    """Budgets of ``wpbjax packages``: comma-separated integers in 0..MAX_COST (what every package
    solver and writer computes exactly; wpbjax.packages.model)."""
    from wpbjax.packages.model import MAX_COST

    return int_list(text, minimum=0, maximum=MAX_COST)


def name_list(text: str) -> list[str]:
    """Comma-separated names, at least one."""
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError("expected at least one name")
    return values


def policy_spec(text: str) -> str:
    """``published`` or comma-separated policy names (checked against the registry later)."""
    if not any(part.strip() for part in text.split(",")):
        raise argparse.ArgumentTypeError("expected 'published' or comma-separated policy names, got an empty list")
    return text.strip()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < float("inf"):  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {value}")
    return value


def param_spec(text: str) -> tuple[str, list[float]]:
    """``NAME=start:stop:count`` or ``NAME=v1,v2,...`` (``wpbjax sweep --param``)."""
    from wpbjax.sweeps.plan import parse_param_values

    name, sep, values = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=start:stop:count or NAME=v1,v2,..., got {text!r}")
    try:
        return name.strip(), parse_param_values(values)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {err}") from None


def memory_size(text: str) -> int:
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number, unit = text.rstrip("KMGkmgBb"), text[len(text.rstrip("KMGkmgBb")) :].upper().rstrip("B")
    try:
        value = int(float(number) * units[unit])
    except (ValueError, KeyError, OverflowError):  # OverflowError: "inf"
        raise argparse.ArgumentTypeError(f"expected a size like 2G, 512M or 1000000, got {text!r}") from None
    if value < 64 << 10:
        raise argparse.ArgumentTypeError(f"expected at least 64K, got {text!r}")
    return value
