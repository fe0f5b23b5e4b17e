-- tests: mart_scaling_efficiency
-- severity: structural
-- description: scaling_kind is a value of its vocabulary, and says what the batch sizes say.
select round, submitter, benchmark, system, scaling_kind, size_ratio, base_global_batch_size, global_batch_size
from mart_scaling_efficiency
where scaling_kind not in (select value from raw_vocabulary_seed where vocabulary = 'scaling_kind')
    or (scaling_kind = 'weak' and global_batch_size / base_global_batch_size < 0.9 * size_ratio)
    or (scaling_kind = 'strong' and abs(global_batch_size / base_global_batch_size - 1) > 0.1)
    or (weak_scaling_efficiency is not null and not is_base and scaling_kind is distinct from 'weak')
