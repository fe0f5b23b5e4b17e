"""Definitions of the site domain (loaded by dg.load_from_defs_folder)."""
