"""The real TICKIT dimension tables (see README.md for provenance)."""
