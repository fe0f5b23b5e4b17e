-- tests: fct_inference_result
-- severity: plausibility
-- description: Every result's metric equals MLCommons' own table where the archive ships it (to the table's printed precision: 6 significant digits, or the summary's 2 decimals).
select round, location, performance_result, mlcommons_performance_result, mlcommons_units
from fct_inference_result
where mlcommons_performance_result is not null
    and abs(performance_result - mlcommons_performance_result) > greatest(
        1e-6 * abs(mlcommons_performance_result),
        case when abs(mlcommons_performance_result) >= 1
            then pow(10, floor(log10(abs(mlcommons_performance_result))) + 1 - 6) else 0 end,
        0.005)
