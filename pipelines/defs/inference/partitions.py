import dagster as dg

# An MLPerf Inference round (v5.1): not a Training or HPC round of the same name. Dynamic, as theirs.
mlperf_inference_rounds = dg.DynamicPartitionsDefinition(name="mlperf_inference_round")
