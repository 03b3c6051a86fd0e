"""The vectorised integrity numerators (wpbjax/scoring/integrity.py: runs as bits of words, a layout per chunk)
against a plain per-run Python model of their definitions over the fact tables, on random tables with
several facts per step, repeated versions, transient steps and runs past one 64-bit word."""

import numpy as np
import pytest

from wpbjax.episodes.facts import fact_tables
from wpbjax.scoring import integrity


def _tables(seed: int, n: int, n_steps: int, width: int):
    """Random fact tables (facts.fact_tables) of n episodes, some slots empty, some not persisting."""
    rng = np.random.default_rng(seed)
    fact = np.where(rng.random((n, n_steps, width)) < 0.7, rng.integers(0, 4, (n, n_steps, width)), -1)
    version = rng.integers(0, 3, (n, n_steps, width))
    persist = rng.random((n, n_steps, width)) < 0.85
    length = rng.integers(n_steps // 2, n_steps + 1, n)
    valid = np.arange(n_steps)[None, :] < length[:, None]
    extra = np.where(rng.random((n, 2)) < 0.5, rng.integers(0, n_steps, (n, 2)), -1)
    return fact_tables(fact, version, persist, valid, length, extra)


class _Batch:
    def __init__(self, tables):
        self.__dict__.update(tables)


def _plain(tables: dict, kept: np.ndarray) -> dict:
    """[n, R] numerators by loops: ``kept`` [n, R, T] bool, each run's W. Slot (pos, k) is named k*T + pos."""
    n, n_runs, n_steps = kept.shape
    width = tables["fact_pair"].shape[2]
    out = {name: np.zeros((n, n_runs), np.int64) for name in integrity.NUMERATORS}
    for e in range(n):
        slots = [
            (k * n_steps + pos, pos, k)
            for k in range(width)
            for pos in range(n_steps)
            if tables["fact_pair"][e, pos, k] >= 0
        ]
        for r in range(n_runs):
            w = kept[e, r]
            held = {}  # pair name -> held
            fact_held, fact_current = {}, {}
            for _name, pos, k in slots:
                pair, key = tables["fact_pair"][e, pos, k], tables["fact_key"][e, pos, k]
                held[pair] = held.get(pair, False) or bool(w[pos])
                fact_held[key] = fact_held.get(key, False) or bool(w[pos])
            at = {name: (pos, k) for name, pos, k in slots}
            for _name, pos, k in slots:
                pair, key = tables["fact_pair"][e, pos, k], tables["fact_key"][e, pos, k]
                if tables["fact_latest"][e][at[pair]]:
                    fact_current[key] = fact_current.get(key, False) or bool(w[pos])
            for pair, is_held in held.items():
                if not is_held:
                    continue
                out["n_pairs_held"][e, r] += 1
                out["n_latest_held"][e, r] += bool(tables["fact_latest"][e][at[pair]])
                out["n_probes_held"][e, r] += int(tables["fact_probes"][e][at[pair]])
                prev = tables["fact_prev"][e][at[pair]]
                out["n_changes_held"][e, r] += bool(prev >= 0 and held.get(prev, False))
            for key, is_held in fact_held.items():
                out["n_facts_held"][e, r] += is_held
                out["n_stale"][e, r] += is_held and not fact_current.get(key, False)
            out["n_transient_held"][e, r] = int((w & tables["transient"][e]).sum())
    return out


@pytest.mark.parametrize("seed, n, n_steps, width, n_runs", [(0, 5, 12, 1, 3), (1, 4, 10, 3, 11), (2, 3, 9, 2, 70)])
def test_numerators_equal_a_plain_per_run_model(seed, n, n_steps, width, n_runs):
    tables = _tables(seed, n, n_steps, width)
    kept = np.random.default_rng(seed + 100).random((n, n_runs, n_steps)) < 0.4
    got = integrity.numerators(np.packbits(kept, axis=-1), _Batch(tables))
    want = _plain(tables, kept)
    assert sum(int(value.sum()) for value in want.values()) > 0  # the model counts something
    for name in integrity.NUMERATORS:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_param_grid_folds_into_runs_with_the_same_counts():
    """Episodes repeated grid-major (a param grid's points) give each copy its own runs' counts."""
    tables = _tables(3, 4, 10, 2)
    batch = _Batch(tables)
    rng = np.random.default_rng(7)
    indices = np.tile(np.array([2, 0, 3]), 5)  # 5 grid points x 3 episodes
    kept = rng.random((len(indices), 4, 10)) < 0.5
    bits = np.packbits(kept, axis=-1)
    host = {"retained": bits, "n_present": np.full((len(indices), 4), 9), "n_retained": kept.sum(-1)}
    folded = integrity.columns(host, batch, indices, host["n_retained"])
    for number, episode in enumerate(indices):  # one run at a time, no fold
        alone = integrity.columns(
            {key: value[number : number + 1] for key, value in host.items()},
            batch,
            np.array([episode]),
            host["n_retained"][number : number + 1],
        )
        for name in integrity.COLUMNS:
            np.testing.assert_array_equal(folded[name][number], alone[name][0], err_msg=name)
    assert integrity._copies(indices) == 5 and integrity._copies(np.array([2, 0, 2])) == 1
