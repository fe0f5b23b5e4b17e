import dagster as dg

# An MLPerf HPC round (v3.0): not a Training round of the same name. Dynamic, as Training's.
mlperf_hpc_rounds = dg.DynamicPartitionsDefinition(name="mlperf_hpc_round")
