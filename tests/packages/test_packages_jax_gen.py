"""The JAX package generator: memaudit_small's shape, its value sets, scored like any package set."""

import jax
import numpy as np

from wpbjax.packages import sweeps
from wpbjax.packages.jax_gen import random_packages
from wpbjax.packages.memaudit_gen import memaudit_small


def test_random_packages_have_memaudit_shape_and_values():
    pset = random_packages(jax.random.key(3), 64, normal_count=4, update_count=3)
    ref = memaudit_small([0], normal_count=4, update_count=3).batch
    batch = pset.batch
    assert batch.coverage.shape[1:] == ref.coverage.shape[1:]
    for field in ("valid", "kind", "coverage", "invalidation", "rank"):
        np.testing.assert_array_equal(np.asarray(getattr(batch, field))[5], np.asarray(getattr(ref, field))[0])
    fact_units = [r for r in range(batch.weight.shape[1]) if ref.weight[0, r] in (1.0, 1.2, 1.4)]
    assert set(np.unique(batch.weight[:, fact_units])) <= {1.0, 1.2, 1.4}
    assert set(np.unique(batch.weight[:, ref.invalidation[0]])) <= {2.0, 2.25, 2.5}
    raw_costs = batch.cost[:, :4, 2]  # fact groups' raw spans: 5 + {0, 1}
    assert set(np.unique(raw_costs)) == {5, 6}
    table = sweeps.run(pset, [2, 8], ["opt", "oracle_gvt", "density_only"], distribution="random")
    assert (table["ratio"] <= 1 + 1e-12).all() and (table["cost"] <= table["budget"]).all()
