-- tests: fct_training_run
-- severity: structural
-- description: Units, counting styles and precisions of the runs are values of their vocabularies.
select round, run_file, 'convergence_counted_in' as column_name, convergence_counted_in as value
from fct_training_run
where convergence_counted_in not in (select value from raw_vocabulary_seed where vocabulary = 'progress_unit')
union all
select round, run_file, 'throughput_counting', throughput_counting
from fct_training_run
where throughput_counting not in (select value from raw_vocabulary_seed where vocabulary = 'throughput_counting')
union all
select round, run_file, 'precision_logged', precision_logged
from fct_training_run
where precision_logged not in (select value from raw_vocabulary_seed where vocabulary = 'precision')
