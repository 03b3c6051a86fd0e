"""Old name of :mod:`wpbjax.policies.published` (the published harness's seven policies)."""
from wpbjax.policies.published import *  # noqa: F401,F403
from wpbjax.policies.published import (  # noqa: F401
    EVICTS_OLDEST, PRIVILEGED_ONLY, PUBLISHED_POLICIES, REFERENCE_POLICIES, TRACK_LINEUP, UNPRIVILEGED, WRITES,
    GreedyState, MergeState, greedy_init, merge_init)
