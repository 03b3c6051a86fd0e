"""Episodes from real sources: OpenAPI histories (reading specs, client surfaces, drift labels, real-drift
windows), Markdown changelogs (entries, episodes, the shipped ones, agreement with a history) and WRIT
scenarios (events and probes)."""
