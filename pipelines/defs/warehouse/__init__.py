"""Definitions of the warehouse domain (loaded by dg.load_from_defs_folder)."""
