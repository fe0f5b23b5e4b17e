-- model: int_build_parameters
-- kind: view
-- grain: none: one row, the build's assumptions side by side
-- depends on: raw_build_parameters
-- description: The build's assumptions (raw_build_parameters) as one row: the PUE, the electricity price and their sources.
select
    max(value) filter (where name = 'pue') as pue,
    max(value) filter (where name = 'electricity_usd_per_kwh') as electricity_usd_per_kwh,
    string_agg(name || ': ' || source, '; ' order by name) as assumptions
from raw_build_parameters
