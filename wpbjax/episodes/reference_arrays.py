"""Old name of :mod:`wpbjax.episodes.published_arrays` (the published generator's episodes as arrays)."""
from wpbjax.episodes.published_arrays import *  # noqa: F401,F403
from wpbjax.episodes.published_arrays import as_jax_config, generate_encoded, latent  # noqa: F401
