"""Game families, one sub-package each, and the registry of their named variants."""
