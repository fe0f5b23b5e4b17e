-- model: mart_energy
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: fct_training_result, dim_system, mart_cost_to_train_headline, int_build_parameters
-- description: Energy metrics of every result with an energy to train: power, samples per joule, energy cost and its share of the cost to train.
-- columns:
--   round varchar
--   submitter varchar
--   organization varchar
--   system varchar
--   system_name varchar
--   benchmark varchar
--   division varchar
--   accelerator varchar
--   accelerator_count bigint
--   power_measurement_type varchar: AC or DC (fct_training_result)
--   score_minutes double
--   energy_to_train_j double: energy to train, J (fct_training_result)
--   energy_to_train_kwh double: the same, kWh
--   average_power_w double: energy to train ÷ the score's seconds: the system's mean power while training, W
--   average_power_per_accelerator_w double: average_power_w ÷ accelerator_count (hosts and switches included), W
--   samples_to_converge double: mean samples to converge of the olympic-mean runs (fct_training_result)
--   samples_per_joule double: samples to converge ÷ energy to train: throughput per watt (samples/s per W)
--   pue double: power usage effectiveness applied (raw_build_parameters: MLPERF_PUE, default with its source)
--   facility_energy_kwh double: energy_to_train_kwh × pue: with the facility's cooling and conversion
--   electricity_usd_per_kwh double: the electricity price applied (MLPERF_ELECTRICITY_USD_PER_KWH; NULL: not set)
--   energy_cost_usd double: facility_energy_kwh × electricity_usd_per_kwh (NULL without a price)
--   cost_to_train_usd double: the cheapest bookable cost to train (mart_cost_to_train_headline)
--   energy_share_of_cost double: energy_cost_usd ÷ cost_to_train_usd (NULL without both)
--   assumptions varchar: the sources of the PUE and the electricity price
-- One row per result with an energy to train (power submissions, v4.0 on). The measured energy is the
-- system's (nodes and switches, AC or DC as labelled); the PUE adds the facility around it. Energy costs
-- need an electricity price: no single public figure is representative, so there is none by default.
select
    r.round,
    r.submitter,
    s.organization,
    r.system,
    s.system_name,
    r.benchmark,
    r.division,
    s.accelerator,
    r.accelerator_count,
    r.power_measurement_type,
    r.score_minutes,
    r.energy_to_train_j,
    r.energy_to_train_kwh,
    r.energy_to_train_j / (r.score_minutes * 60.0) as average_power_w,
    r.energy_to_train_j / (r.score_minutes * 60.0) / nullif(r.accelerator_count, 0) as average_power_per_accelerator_w,
    r.samples_to_converge,
    r.samples_to_converge / r.energy_to_train_j as samples_per_joule,
    p.pue,
    r.energy_to_train_kwh * p.pue as facility_energy_kwh,
    p.electricity_usd_per_kwh,
    r.energy_to_train_kwh * p.pue * p.electricity_usd_per_kwh as energy_cost_usd,
    h.cost_to_train_usd,
    r.energy_to_train_kwh * p.pue * p.electricity_usd_per_kwh / h.cost_to_train_usd as energy_share_of_cost,
    p.assumptions
from fct_training_result as r
cross join int_build_parameters as p
left join dim_system as s using (round, submitter, system)
left join mart_cost_to_train_headline as h using (round, submitter, system, benchmark)
where r.energy_to_train_j is not null and r.score_minutes > 0
