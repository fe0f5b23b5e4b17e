-- model: fct_quarantine
-- kind: table
-- grain: none: one row per rejected file or row; one row can be rejected for several reasons
-- depends on: raw_quarantine
-- description: Every row or file that failed parsing or validation, with the reason.
-- columns:
--   source varchar: what was being read: mlperf/<table> for a round's files, prices/<source> for a price list
--   partition varchar: the round or the price snapshot
--   file varchar: the file inside the archive or the response
--   record varchar: the line, row or item within it
--   reason varchar: why it was rejected: the check or limit it failed, and the value
--   payload varchar: what was rejected, as read (cut to a bounded length)
-- Every row or file that failed parsing or validation, with the reason. Nothing is dropped silently.
select source, partition, file, record, reason, payload
from raw_quarantine
