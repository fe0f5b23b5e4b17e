-- model: fct_quarantine
-- kind: table
-- grain: none: one row per rejected file or row; one row can be rejected for several reasons
-- depends on: raw_quarantine
-- description: Every row or file that failed parsing or validation, with the reason.
-- Every row or file that failed parsing or validation, with the reason. Nothing is dropped silently.
select source, partition, file, record, reason, payload
from raw_quarantine
