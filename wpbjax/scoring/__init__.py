"""Scores (engine, layer 3, below the policies): metrics, the knapsack oracle, integrity, reads, results rows."""
