"""Definitions of the MLPerf HPC domain (loaded by dg.load_from_defs_folder)."""
