"""Definitions of the prices domain (loaded by dg.load_from_defs_folder)."""
