"""Old name of :mod:`wpbjax.episodes.published_gen` (the published generator, in Python)."""
from wpbjax.episodes.published_gen import *  # noqa: F401,F403
from wpbjax.episodes.published_gen import MODES, DriftConfig, draw_episode, generate_episode, generate_episodes, paper_filename  # noqa: F401
