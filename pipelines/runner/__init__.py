"""Running the definitions' jobs from the command line (`mlperf-warehouse refresh`, `ui`) on the warehouse's
Dagster instance. Outside `defs/`, which Dagster loads as the code location: nothing here is a definition."""
