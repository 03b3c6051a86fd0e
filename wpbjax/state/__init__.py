"""State (layer 2): the store, holding every budget rule, and the actions a policy emits."""
