"""Python's ``random.Random`` draws for many seeds at once, on numpy, bit for bit.

CPython's ``random.Random`` is MT19937. Every draw the published generator makes is a function of
the stream's 32-bit outputs: ``random()`` takes two words ``a, b`` and is
``((a >> 5) * 2**26 + (b >> 6)) / 2**53``; ``getrandbits(k)`` for ``k <= 32`` takes one word and is
``word >> (32 - k)``; ``randrange``/``randint`` draw ``getrandbits(n.bit_length())`` until the value is
below ``n`` (CPython 3.9+, ``Lib/random.py`` ``_randbelow_with_getrandbits``). So a seed's stream is
taken from Python itself (``getstate()``: the generator's 624 words and position, which also covers
Python's seeding of negative and large ints) and continued by numpy's MT19937 (the same algorithm and
state layout), and the draws are read off the words with array arithmetic, one step of every stream
at a time. A Python loop per stream and draw is what this replaces.

A :class:`Streams` reads each stream from its own position (``at`` [N]); a read past the words made
marks the stream ``short`` (its values are then meaningless) rather than failing, and the caller makes
those streams again with more words.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

STATE_WORDS = 624  # MT19937's state
TWO_POW_26, TWO_POW_53 = 67108864.0, 9007199254740992.0
LOOKAHEAD = 8  # words Streams.below reads at once: a run of 8 rejections is rare (at most 2**-8)


def words(seeds: Sequence[int], n_words: int) -> np.ndarray:
    """[n_words, N] uint32 (word-major): the first ``n_words`` 32-bit outputs of ``random.Random(seed)``
    for each of N seeds (``getrandbits(32)`` each)."""
    state = seeded(seeds)
    blocks = []
    for _ in range(-(-n_words // STATE_WORDS)):
        _twist(state)
        blocks.append(_temper(state))
    return np.concatenate(blocks)[:n_words] if blocks else np.empty((0, len(seeds)), np.uint32)


def seeded(seeds: Sequence[int]) -> np.ndarray:
    """[624, N] uint32: MT19937's state after ``random.Random(seed)``, per seed. Python seeds an int
    with ``init_by_array`` of its absolute value's 32-bit words (CPython ``Modules/_randommodule.c``);
    seeds of one word (0 <= seed < 2**32, every generated set's) are seeded here, all at once, and any
    other is taken from Python's ``getstate()``."""
    seeds = [int(seed) for seed in seeds]
    one_word = np.array([0 <= seed < 2**32 for seed in seeds], bool)
    key = np.array([seed if ok else 0 for seed, ok in zip(seeds, one_word)], np.uint32)
    state = np.empty((STATE_WORDS, len(seeds)), np.uint32)
    state[:] = _GENRAND_19650218[:, None]
    # init_by_array with a one-word key: a pass of 624 mixes adding the key, then one of 623
    # subtracting the index; both walk i = 1 .. 623 and wrap to 1, copying word 623 to word 0.
    index = 1
    with np.errstate(over="ignore"):
        for _ in range(STATE_WORDS):
            before = state[index - 1]
            state[index] = (state[index] ^ ((before ^ (before >> 30)) * np.uint32(1664525))) + key
            index += 1
            if index == STATE_WORDS:
                state[0], index = state[STATE_WORDS - 1], 1
        for _ in range(STATE_WORDS - 1):
            before = state[index - 1]
            state[index] = (state[index] ^ ((before ^ (before >> 30)) * np.uint32(1566083941))) - np.uint32(index)
            index += 1
            if index == STATE_WORDS:
                state[0], index = state[STATE_WORDS - 1], 1
    state[0] = 0x80000000
    for column in np.flatnonzero(~one_word):
        _, python_state, _ = random.Random(seeds[column]).getstate()
        state[:, column] = python_state[:STATE_WORDS]
    return state


def _genrand(seed: int) -> np.ndarray:
    """[624] uint32: MT19937's ``init_genrand(seed)`` (the start of ``init_by_array``)."""
    state = [seed]
    for index in range(1, STATE_WORDS):
        state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + index) & 0xFFFFFFFF)
    return np.array(state, np.uint32)


_GENRAND_19650218 = _genrand(19650218)


def _twist(state: np.ndarray) -> None:
    """MT19937's next state of every column of ``state`` [624, N] (in place). Word ``i`` becomes
    ``state[i + 397] ^ mix(state[i], state[i + 1])`` (indices mod 624) with the words below ``i``
    already new: done in four slices whose reads are all of words that are already new, or not yet."""
    n, m = STATE_WORDS, 397
    for low, high in ((0, n - m), (n - m, 2 * (n - m)), (2 * (n - m), n - 1), (n - 1, n)):
        following = state[(np.arange(low, high) + 1) % n]
        y = (state[low:high] & np.uint32(0x80000000)) | (following & np.uint32(0x7FFFFFFF))
        state[low:high] = state[(np.arange(low, high) + m) % n] ^ (y >> 1) ^ ((y & 1) * np.uint32(0x9908B0DF))


def _temper(state: np.ndarray) -> np.ndarray:
    """The outputs [624, N] uint32 of a freshly twisted ``state``."""
    y = state ^ (state >> 11)
    y ^= (y << 7) & np.uint32(0x9D2C5680)
    y ^= (y << 15) & np.uint32(0xEFC60000)
    return y ^ (y >> 18)


class Streams:
    """Streams' words [W, N] (:func:`words`) and each one's read position ``at`` [N] (int64).

    Every read takes an index array ``rows`` (the streams that draw now) and advances just those
    streams, as a per-stream Python loop would."""

    def __init__(self, stream_words: np.ndarray):
        self.width, n = stream_words.shape
        self.flat = stream_words.reshape(-1)
        self.at = np.zeros(n, np.int64)

    @property
    def short(self) -> np.ndarray:
        """[N] bool: the streams that read past their words (their draws are void)."""
        return self.at > self.width

    def _next(self, rows: np.ndarray) -> np.ndarray:
        """[len(rows)] uint32: the next word of each of ``rows`` (the last word, past the end)."""
        at = self.at[rows]
        self.at[rows] = at + 1
        return self.flat[np.minimum(at, self.width - 1) * len(self.at) + rows]

    def uniform(self, rows: np.ndarray) -> np.ndarray:
        """[len(rows)] float64: ``random()`` of each of ``rows``."""
        high = (self._next(rows) >> 5).astype(np.float64)
        return (high * TWO_POW_26 + (self._next(rows) >> 6)) * (1.0 / TWO_POW_53)

    def below(self, rows: np.ndarray, n: int) -> np.ndarray:
        """[len(rows)] int64: ``_randbelow(n)`` (``randrange(n)``) of each of ``rows``, n >= 1: draws of
        ``getrandbits(n.bit_length())`` until one is below ``n``, each stream as many as it needs
        (read LOOKAHEAD words at a time: more than one word is wasted only past the last of them)."""
        shift, n_rows = 32 - n.bit_length(), len(self.at)
        value = np.empty(len(rows), np.int64)
        drawing = np.arange(len(rows))
        while len(drawing):
            streams, at = rows[drawing], self.at[rows[drawing]]
            ahead = np.minimum(at[:, None] + np.arange(LOOKAHEAD), self.width - 1)
            drawn = (self.flat[ahead * n_rows + streams[:, None]] >> shift).astype(np.int64)
            fits = drawn < n
            first = fits.argmax(1)
            found = fits[np.arange(len(drawing)), first]
            self.at[streams] = at + np.where(found, first + 1, LOOKAHEAD)
            # a short stream stops (its value is void)
            done = found | (self.at[streams] > self.width)
            value[drawing[done]] = drawn[np.arange(len(drawing)), first][done]
            drawing = drawing[~done]
        return value
