"""Why a round's new archive is refused: its previously staged data then stays in the warehouse."""

from __future__ import annotations

from pipelines.lib.io.limits import limit


class RoundRejected(ValueError):
    """The round's new archive is refused; its previously staged data stays in the warehouse."""


class NoResultLogs(RoundRejected):
    """The archive holds no result log in any layout the parser knows: nothing to load."""


class RoundMismatch(RoundRejected):
    """The archive declares another round than the partition it was fetched for."""


class ScoringDeadline(RoundRejected):
    """Parsing and scoring a round took longer than MLPERF_SCORING_DEADLINE_SECONDS."""

    def __init__(self, round_version: str):
        super().__init__(f"{round_version}: parsing and scoring did not finish within {limit('scoring_deadline_seconds'):,g} s "
                         "(MLPERF_SCORING_DEADLINE_SECONDS): its worker processes were ended; the round keeps its "
                         "previous data")
