"""Host metrics: the retained utility sum by half-byte tables equals the unpacked sum bit for bit."""

import numpy as np
import pytest

from wpbjax.scoring import metrics


def _unpacked_sum(retained_bits, utility64):
    """The definition: Σ_{t∈W} u_t over the unpacked retained bits (numpy's own summation order)."""
    kept = np.unpackbits(retained_bits, axis=-1, count=utility64.shape[-1]).astype(bool)
    return np.where(kept, utility64, 0.0).sum(axis=-1)


@pytest.mark.parametrize("n_steps", [1, 7, 8, 13, 200, 203])
def test_half_byte_tables_equal_the_unpacked_sum_bit_for_bit(n_steps):
    rng = np.random.default_rng(n_steps)
    # grid utilities (the paper's 0.5/1/5/6, a negative and a large one): every partial sum is exact
    utility = rng.choice([0.0, 0.5, 1.0, 5.0, 6.0, -2.25, 1e6], size=(40, 1, n_steps))
    bits = rng.integers(0, 256, (40, 11, -(-n_steps // 8)), dtype=np.uint8)
    assert metrics._sums_exact(utility)
    for retained, values in ((bits, utility), (bits[:, 3], utility[:, 0]), (bits, utility[0, 0]), (bits[:1], utility)):
        fast = metrics.policy_utility(retained, values)
        assert fast.shape == _unpacked_sum(retained, values).shape
        assert np.array_equal(fast, _unpacked_sum(retained, values))
    # hand check: steps 0 and 9 of 13 kept (bytes 0b10000000, 0b01000000) -> u_0 + u_9
    one = np.zeros((1, 2), np.uint8)
    one[0] = [0b10000000, 0b01000000]
    if n_steps == 13:
        assert metrics.policy_utility(one, utility[0, 0][None]) == utility[0, 0, 0] + utility[0, 0, 9]


def test_utilities_off_the_grid_take_the_unpacked_sum():
    rng = np.random.default_rng(1)
    utility = rng.random((30, 1, 50))  # not multiples of 2^-16: the sum's order matters
    bits = rng.integers(0, 256, (30, 4, 7), dtype=np.uint8)
    assert not metrics._sums_exact(utility)
    assert not metrics._sums_exact(np.full((1, 2), 2.0**60))  # on the grid but too large to add exactly
    assert np.array_equal(metrics.policy_utility(bits, utility), _unpacked_sum(bits, utility))
