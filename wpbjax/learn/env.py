"""The simulator as a gymnax-style environment, for JAX RL code that learns write policies.

    env = WriteEnv(encoded.batch("unprivileged"), track="unprivileged")
    params = env.default_params._replace(budget=2048)          # traced: no recompile per budget
    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

* Explicit keys: ``reset`` draws the episode from the pool; ``step`` takes a key (unused: the
  dynamics are deterministic) so agents can treat it like any gymnax environment.
* Observation: the online features of the incoming step (wpbjax.learn.features), ``[D]`` float32.
* Actions: 0 = SKIP, 1 = WRITE; the store (wpbjax.state.store) accepts a WRITE iff it fits.
* Reward: the change in the F1 of the store, 2·hits / (retained + |R|), so an episode's rewards sum
  to its final F1 exactly (|R| is the episode's number of critical steps, a label).
* ``terminated`` at the episode's last real step; ``truncated`` when ``params.max_steps`` steps have
  been taken first. After either, ``step`` leaves the state unchanged and rewards 0 (no auto-reset:
  call ``reset``), so fixed-length vmapped rollouts need no masking.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from wpbjax.common.tracks import check_track
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.learn.features import N_FEATURES, FeatureState, check_batch, init_state, steps_since_write
from wpbjax.learn.gate import gate_step
from wpbjax.scoring.metrics import f1_from_counts
from wpbjax.state import actions, store as store_lib

SKIP, WRITE = 0, 1


class EnvParams(NamedTuple):
    budget: jax.Array  # [] int32 bytes
    max_steps: jax.Array  # [] int32 truncation horizon


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EnvState:
    episode: jax.Array  # []  int32 index of the episode in the pool
    pos: jax.Array  # []  int32 the step the next action applies to
    store: store_lib.StoreState  # the exact store ([T] arrays)
    features: FeatureState  # running feature state, steps 0..pos observed
    observation: jax.Array  # [D] float32 features of step pos
    hits: jax.Array  # []  int32 critical steps stored
    retained: jax.Array  # []  int32 steps stored
    done: jax.Array  # []  bool  terminated or truncated


class WriteEnv:
    """A pool of episodes (``EpisodeBatch`` [N, T] of one track) as an environment."""

    num_actions = 2
    observation_shape = (N_FEATURES,)

    def __init__(self, episodes: EpisodeBatch, track: str = "unprivileged"):
        check_batch(episodes)
        self.episodes = episodes
        self.track = check_track(track)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(budget=jnp.asarray(10240, jnp.int32), max_steps=jnp.asarray(self.episodes.n_steps, jnp.int32))

    def _episode(self, index) -> EpisodeBatch:
        return jax.tree_util.tree_map(lambda leaf: leaf[index], self.episodes)

    def _observe(self, episode, features, store, pos, budget):
        gate, features = gate_step(
            None,
            self.track,
            features,
            episode,
            pos,
            budget,
            store_lib.remaining(store, budget),
            steps_since_write(store.newest, pos),
        )
        return gate.features, features

    def reset(self, key, params: EnvParams):
        """``(observation [D], state)`` at step 0 of an episode drawn uniformly from the pool."""
        return self.reset_episode(jax.random.randint(key, (), 0, self.episodes.n_episodes), params)

    def reset_episode(self, index, params: EnvParams):
        """``(observation, state)`` at step 0 of the pool's episode ``index`` (evaluation sweeps)."""
        index = jnp.asarray(index, jnp.int32)
        episode = self._episode(index)
        store = store_lib.empty(self.episodes.n_steps)
        observation, features = self._observe(episode, init_state(episode), store, 0, params.budget)
        zero = jnp.zeros((), jnp.int32)
        state = EnvState(
            episode=index,
            pos=zero,
            store=store,
            features=features,
            observation=observation,
            hits=zero,
            retained=zero,
            done=jnp.zeros((), bool),
        )
        return observation, state

    def step(self, key, state: EnvState, action, params: EnvParams):
        """Apply ``action`` (0 SKIP, 1 WRITE) to step ``state.pos``. Returns
        ``(observation, state, reward, terminated, truncated, info)``."""
        del key  # deterministic dynamics
        episode = self._episode(state.episode)
        pos, budget = state.pos, params.budget
        wants = (action == WRITE) & ~state.done
        store = store_lib.apply(state.store, actions.write_if(wants), episode, pos, budget, frozenset({"write"}))
        stored = store_lib.added(store)
        hits = state.hits + (stored & episode.critical[pos])
        retained = state.retained + stored
        n_critical = episode.critical.sum()

        def f1(hits, retained):
            return f1_from_counts(hits, retained, n_critical)

        reward = f1(hits, retained) - f1(state.hits, state.retained)
        next_pos = jnp.minimum(pos + 1, self.episodes.n_steps - 1)
        terminated = ~state.done & (pos + 1 >= episode.length)
        truncated = ~state.done & ~terminated & (pos + 1 >= params.max_steps)
        done = state.done | terminated | truncated
        store = store_lib.flush(store, pos + 1, frozenset({"write"}))
        observation, features = self._observe(episode, state.features, store, next_pos, budget)
        new_state = EnvState(
            episode=state.episode,
            pos=jnp.where(done, pos, next_pos),
            store=store,
            features=features,
            observation=observation,
            hits=hits,
            retained=retained,
            done=done,
        )
        # once done, nothing changes any more
        new_state = jax.tree_util.tree_map(lambda old, new: jnp.where(state.done, old, new), state, new_state)
        info = {"f1": f1(new_state.hits, new_state.retained), "bytes_used": new_state.store.used}
        return new_state.observation, new_state, jnp.where(state.done, 0.0, reward), terminated, truncated, info
