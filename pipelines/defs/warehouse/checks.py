import dagster as dg
import duckdb

from pipelines.defs.resources import WarehouseLocation
from pipelines.lib.io.paths import published_db
from pipelines.lib.mlperf.suites import SUITES, TRAINING
from pipelines.lib.warehouse.query import connect_readonly


@dg.asset_check(
    asset="fct_quarantine",
    additional_deps=["fct_training_run"],
    description="Quarantine counts per source and round. Fails when a round's result logs are mostly "
    "unparseable (a sign the log format changed under us).",
)
def quarantine_counts(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        counts = con.execute(
            "select source || ':' || partition, count(*) from fct_quarantine group by all order by 1"
        ).fetchall()
        worst = con.execute(
            "select round, avg((parse_errors > 0)::int) as share from fct_training_run group by all order by share desc limit 1"
        ).fetchone()
    return dg.AssetCheckResult(
        passed=worst is None or worst[1] <= 0.5,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={k: v for k, v in counts}
        | ({"worst_round": worst[0], "worst_unparseable_share": float(worst[1])} if worst else {}),
    )


_LISTED = 50  # rows named in a check's metadata; the count says how many there are in all


@dg.asset_check(
    asset=TRAINING.systems_model,
    additional_deps=[s.systems_model for s in SUITES.values() if s.systems_model != TRAINING.systems_model],
    description="Every accelerator_model_name of each suite's systems table (dim_system, dim_hpc_system, "
    "dim_inference_system) maps to an accelerator key (by exact override or by the naming rule), or the systems "
    "whose name maps to nothing are named here (round as its suite labels it, submitter, system, "
    "accelerator_model_name). A warning: new hardware must never fail a refresh. Names mapped to nothing on "
    "purpose (CPU-only systems) are listed apart; a system of several accelerator kinds (mixed) is neither.",
)
def unmapped_accelerators(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    rows = []
    with connect_readonly(published_db(warehouse_location.path())) as con:
        for suite in SUITES.values():
            try:
                found = con.execute(
                    "select accelerator_mapping, round, submitter, system, coalesce(accelerator_model_name, '(none)') "
                    f"from {suite.systems_model} where accelerator_mapping not in ('mapped', 'mixed') "
                    "order by 1, 2, 3, 4").fetchall()
            except duckdb.CatalogException:  # a warehouse published before the suite's systems table
                continue
            rows += [(kind, suite.round_label(r), sub, sys, name) for kind, r, sub, sys, name in found]
    unmapped = [f"{r} {sub} {sys}: {name!r}" for kind, r, sub, sys, name in rows if kind == "unmapped"]
    deliberate = sorted({name for kind, _r, _s, _y, name in rows if kind != "unmapped"})
    description = (
        f"{len(unmapped)} systems name an accelerator that maps to nothing: " + "; ".join(unmapped[:10])
        + (" ..." if len(unmapped) > 10 else "")
    ) if unmapped else "every accelerator name maps"
    return dg.AssetCheckResult(
        passed=not unmapped,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "unmapped_systems": len(unmapped),
            "unmapped": dg.MetadataValue.json(unmapped[:_LISTED]),
            "deliberately_unmapped_names": dg.MetadataValue.json(deliberate),
        },
    )


@dg.asset_check(
    asset="mart_utilization",
    additional_deps=["dim_accelerator"],
    description="Accelerators used by scored results that lack the dense peak their results' precision needs "
    "(BF16, or FP8 for FP8 runs): named with the result count and dim_accelerator's note (e.g. 'Volta has no "
    "BF16', or a key derived by the naming rule with no reference row yet). A warning: MFU is NULL for them.",
)
def accelerators_without_peak(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        rows = con.execute(
            """
            select u.accelerator, upper(u.precision) as precision, count(*) as results,
                   string_agg(distinct u.round, ', ' order by u.round) as rounds,
                   any_value(coalesce(a.note, 'no dim_accelerator row')) as note
            from mart_utilization as u
            left join dim_accelerator as a using (accelerator)
            where u.accelerator is not null and u.peak_flops_used is null
            group by all
            order by results desc, 1
            """
        ).fetchall()
    named = [f"{acc} ({precision}): {n} results in {rounds}; {note}" for acc, precision, n, rounds, note in rows]
    return dg.AssetCheckResult(
        passed=not named,
        severity=dg.AssetCheckSeverity.WARN,
        description=(f"{len(named)} accelerators without the peak their results need: "
                     + "; ".join(named[:8])) if named else "every used accelerator has its peak",
        metadata={"accelerators": len(named), "without_peak": dg.MetadataValue.json(named[:_LISTED])},
    )
