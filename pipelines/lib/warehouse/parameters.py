"""Assumptions a build applies that no upstream source states: written into the build as the table
`raw_build_parameters` (name, value, source), read by the models that need them, and part of the build's
fingerprint (a changed assumption rebuilds). The settings (`MLPERF_ELECTRICITY_USD_PER_KWH`, `MLPERF_PUE`)
set them; the defaults are here, each with its source."""

from __future__ import annotations

from dataclasses import dataclass

# Power usage effectiveness: facility energy ÷ IT energy. The industry's average annual PUE reported by the
# Uptime Institute's Global Data Center Survey 2024 (1.56). The power logs measure the system (nodes and
# switches), not the facility's cooling and conversion: the PUE adds that.
DEFAULT_PUE = 1.56
PUE_SOURCE = "Uptime Institute, Global Data Center Survey 2024: average annual PUE 1.56"
# No default electricity price: rates differ several-fold between regions and contracts, and no single
# public figure is representative. Energy costs are computed once a price is set.
ELECTRICITY_SOURCE = "MLPERF_ELECTRICITY_USD_PER_KWH (unset: energy costs are not computed)"


@dataclass(frozen=True)
class BuildParameters:
    electricity_usd_per_kwh: float | None = None
    pue: float = DEFAULT_PUE

    def rows(self) -> list[tuple[str, float | None, str]]:
        """(name, value, source) of each assumption, as `raw_build_parameters` holds them."""
        pue_source = PUE_SOURCE if self.pue == DEFAULT_PUE else "MLPERF_PUE"
        price_source = ELECTRICITY_SOURCE if self.electricity_usd_per_kwh is None else "MLPERF_ELECTRICITY_USD_PER_KWH"
        return [("electricity_usd_per_kwh", self.electricity_usd_per_kwh, price_source), ("pue", self.pue, pue_source)]

    def fingerprint(self) -> str:
        return repr(self.rows())
