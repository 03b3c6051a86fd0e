"""Reading a regime back from an ``adv.json`` (``wpbjax generate --regime``): the result of one
(policy, budget), and the generator config that writes its episodes."""

from __future__ import annotations

import json
import os

from wpbjax.adversarial.knobs import KnobError, regime_config
from wpbjax.common.argument_errors import arg
from wpbjax.episodes.generators.jax_gen import JaxGenConfig


def load_result(path: str | os.PathLike, policy: str | None, budget: int | None) -> tuple[dict, dict]:
    """(the result of ``policy`` at ``budget``, the file's settings) from an ``adv.json``; either may be
    omitted when the file has one choice for it. One-line :class:`KnobError` naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        results, settings = document["results"], document["settings"]
        pairs = [(result["policy"], int(result["budget"])) for result in results]
    except OSError as error:
        raise KnobError(f"{arg('regime')} {path}: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise KnobError(f"{arg('regime')} {path}: not an adv.json file ({type(error).__name__}: {error})") from None
    chosen = [
        index
        for index, (name, size) in enumerate(pairs)
        if (policy is None or name == policy) and (budget is None or size == budget)
    ]
    if len(chosen) != 1:
        known = ", ".join(f"{name}@{size}" for name, size in pairs)
        what = "no result" if not chosen else "several results"
        raise KnobError(
            f"{arg('regime')} {path}: {what} for {arg('policy')} {policy} {arg('budget')} {budget}; it holds {known}"
        )
    return results[chosen[0]], settings


def result_config(result: dict, settings: dict, seed: int) -> JaxGenConfig:
    """The generator config of a result's regime, in the search's shape, at generator seed ``seed``."""
    try:
        return regime_config(result["regime"], settings["steps"], settings["api_pool"], settings["max_params"], seed)
    except (KeyError, TypeError, ValueError) as error:
        raise KnobError(f"{arg('regime')}: its regime cannot be generated: {error}") from None
