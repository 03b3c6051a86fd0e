"""Episode generators: the published generator (exact JSON), the JAX generator (arrays and its latent decoded
to JSON), the stream statistics their knobs are fitted to, and generation on every core."""
