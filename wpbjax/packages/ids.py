"""The artifact's stable hash of candidate ids (reservoir_raw's order), per string or vectorized."""

from __future__ import annotations

import numpy as np

MODULUS = 1_000_000_007
BASE = 131


def stable_hash(text: str) -> int:
    """``total = (total * 131 + byte) % 1_000_000_007`` over the UTF-8 bytes (the artifact's _stable_hash)."""
    total = 0
    for byte in text.encode("utf-8"):
        total = (total * BASE + byte) % MODULUS
    return total


def hash_ids(candidate_ids, shape) -> np.ndarray:
    """[P][G][C] id strings -> [P, G, C] int64 hashes (-1 on padding)."""
    out = np.full(shape, -1, np.int64)
    for p, groups in enumerate(candidate_ids):
        for g, cands in enumerate(groups):
            for c, cid in enumerate(cands):
                out[p, g, c] = stable_hash(cid)
    return out


def hash_prefixed(prefixes, suffixes) -> np.ndarray:
    """hash(prefix + suffix) for every prefix x suffix, without building the strings: [N, K] int64.

    hash(a + b) = hash(a) * 131^len(b) + hash(b)  (mod 1e9+7); products stay below 2^63.
    """
    head = np.array([stable_hash(p) for p in prefixes], np.int64)[:, None]
    tail = np.array([stable_hash(s) for s in suffixes], np.int64)[None, :]
    scale = np.array([pow(BASE, len(s.encode("utf-8")), MODULUS) for s in suffixes], np.int64)[None, :]
    return (head * scale % MODULUS + tail) % MODULUS
