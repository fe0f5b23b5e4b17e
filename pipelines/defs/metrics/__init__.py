"""Definitions of the metrics domain (loaded by dg.load_from_defs_folder)."""
