"""Definitions of the mlperf domain (loaded by dg.load_from_defs_folder)."""
