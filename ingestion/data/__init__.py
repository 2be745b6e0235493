"""Data files shipped with the project (TICKIT dimension tables for the simulator)."""
