"""mlperf-warehouse: MLPerf Training results and cloud prices in a DuckDB warehouse."""
