"""Base (layer 0): devices and sharding, several processes, the compiled-program cache, the progress bar."""
