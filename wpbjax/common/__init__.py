"""Base (layer 0): budgets, tracks, constants and argument errors, shared by every layer; imports nothing of wpbjax."""
