"""Definitions of every MLPerf suite's rounds, one factory for all (loaded by dg.load_from_defs_folder)."""
