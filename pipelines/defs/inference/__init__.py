"""Definitions of the MLPerf Inference domain (loaded by dg.load_from_defs_folder)."""
