import dagster as dg

# Dynamic, so a newly discovered round becomes a partition without a code change.
mlperf_rounds = dg.DynamicPartitionsDefinition(name="mlperf_round")
