-- tests: fct_inference_result
-- severity: plausibility
-- description: Every result's metric equals MLCommons' own table where the archive ships it, to the digits the table prints.
-- The table prints each figure as its shortest decimal (8840.42, 101611.0, 62.695344): its printed digits are the
-- fewest decimals that reproduce it, and our value rounded to them must be the table's figure. A value read from a
-- summary (performance_log) where MLCommons read a detail log can differ in its last digits: named here.
with printed as (
    select *, (select min(d) from range(0, 16) as t(d)
               where round(mlcommons_performance_result * pow(10, d)) / pow(10, d) = mlcommons_performance_result
              ) as printed_decimals
    from fct_inference_result
    where mlcommons_performance_result is not null
)
select round, location, performance_result, mlcommons_performance_result, printed_decimals, mlcommons_units,
       performance_log, performance_source
from printed
where performance_result is null or printed_decimals is null
    or round(performance_result * pow(10, printed_decimals)) / pow(10, printed_decimals) <> mlcommons_performance_result
