"""Definitions of the operations domain (loaded by dg.load_from_defs_folder)."""
