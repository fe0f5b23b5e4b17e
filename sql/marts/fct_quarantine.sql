-- Every row or file that failed parsing or validation, with the reason. Nothing is dropped silently.
select source, partition, file, record, reason, payload
from raw_quarantine
