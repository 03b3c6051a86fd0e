"""PackageBatch objective against a plainly written F (hand-checked numbers)."""

import numpy as np

from wpbjax.packages.model import KINDS, PackageBatch, cost, invalidation_covered, value


def _one_package() -> PackageBatch:
    # 2 groups; group 0: fact (cost 2, covers unit 0 fully), summary (cost 3, 0.7 unit 0 + 0.5 unit 1);
    # group 1: tombstone (cost 1, covers the invalidation unit 2), padding.
    coverage = np.zeros((1, 2, 2, 3))
    coverage[0, 0, 0] = [1.0, 0.0, 0.0]
    coverage[0, 0, 1] = [0.7, 0.5, 0.0]
    coverage[0, 1, 0] = [0.0, 0.0, 1.0]
    return PackageBatch(
        cost=np.array([[[2, 3], [1, 0]]], np.int32),
        valid=np.array([[[True, True], [True, False]]]),
        kind=np.array(
            [[[KINDS.index("atomic_fact"), KINDS.index("summary")], [KINDS.index("tombstone"), -1]]], np.int32
        ),
        coverage=coverage,
        weight=np.array([[1.2, 0.35, 2.25]]),
        invalidation=np.array([[False, False, True]]),
        rank=np.array([[[0, 1], [2, -1]]], np.int32),
        time=np.array([[[0, 0], [1, 1]]], np.int32),
    )


def test_value_cost_and_invalidation_by_hand():
    batch = _one_package()
    chosen = np.array([[1, 0], [0, -1], [-1, -1]])
    batch3 = batch.take([0, 0, 0])
    # summary + tombstone: 1.2*0.7 + 0.35*0.5 + 2.25*1 = 0.84 + 0.175 + 2.25
    np.testing.assert_allclose(value(batch3, chosen), [0.84 + 0.175 + 2.25, 1.2, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(cost(batch3, chosen), [4, 2, 0])
    np.testing.assert_array_equal(invalidation_covered(batch3, chosen), [1.0, 0.0, 0.0])
    # log1p and linear h
    np.testing.assert_allclose(value(batch3, chosen, "linear")[1], 1.2)
    np.testing.assert_allclose(value(batch3, chosen, "log1p")[1], 1.2 * np.log(2.0))
