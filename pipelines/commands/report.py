"""`mlperf-warehouse report --round v4.1 --benchmark gpt3 [--accelerators A,B] --out DIR`, and
`mlperf-warehouse report --suite inference --round v5.1 [--model M] [--scenario S] --out DIR`."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base
from pipelines.lib.mlperf.suites import INFERENCE, TRAINING

EXAMPLES = """examples:
  mlperf-warehouse report --round v4.1 --out report/
  mlperf-warehouse report --round v4.1 --benchmark gpt3 --accelerators tpu,h100 --out report/
  mlperf-warehouse report --suite inference --round v5.1 --model llama2-70b-99 --scenario Server --out report/

Writes report.html (self-contained), one PNG per chart and figures.json into --out; with --suite inference,
inference_<round>.html (self-contained): every valid result per model and scenario, priced per million."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="render the scaling and cost report (HTML + PNG charts)",
        description="The weak and convergence scaling, cost-to-train and MFU report of one benchmark in one round.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", choices=(TRAINING.name, INFERENCE.name), default=TRAINING.name,
                   help="training (default): a benchmark's scaling and cost report; inference: results priced per million")
    p.add_argument("--round", required=True, metavar="V", help="a round loaded in the warehouse, e.g. v4.1")
    p.add_argument("--model", metavar="NAME", help="inference: one model, e.g. llama2-70b-99 (default: all)")
    p.add_argument("--scenario", metavar="NAME", help="inference: one scenario, e.g. Server (default: all)")
    p.add_argument("--benchmark", metavar="NAME",
                   help="e.g. gpt3 (default: gpt3/llama if the round has it, else the most submitted)")
    p.add_argument("--accelerators", metavar="A,B",
                   help="comma-separated accelerator keys (or parts of them), e.g. tpu,h100 (default: all)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def check_accelerators(con, round_version: str, benchmark: str, accelerators: list[str]) -> None:
    """Each --accelerators entry must match an accelerator of the round's benchmark results."""
    from pipelines.commands import unknown

    present = [a for (a,) in con.execute(
        "select distinct accelerator from mart_scaling_efficiency where round = ? and benchmark = ? "
        "and accelerator is not null order by 1", [round_version, benchmark]).fetchall()]
    for wanted in accelerators:
        if not any(wanted.lower() in a.lower() for a in present):
            raise unknown("accelerator", wanted, present, f"(accelerators with {benchmark} results in {round_version})")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.commands import check_benchmark, check_round, parse_round
    from pipelines.lib.report.round_report import default_benchmark, write_report
    from pipelines.lib.warehouse.query import connect_published

    base = warehouse_base(args)
    round_version = parse_round(args.round)
    if args.suite == INFERENCE.name:
        return _inference(args, base, round_version)
    accelerators = [a.strip() for a in (args.accelerators or "").split(",") if a.strip()] or None
    with connect_published(base) as con:
        check_round(con, round_version)
        if args.benchmark:
            benchmark = check_benchmark(con, round_version, args.benchmark)
        else:
            benchmark = default_benchmark(con, round_version)
            if benchmark is None:
                raise ValueError(f"no scored results in {round_version}: every result of the round lacks a score "
                                 "(see `mlperf-warehouse query \"select * from fct_training_result\"`)")
        if accelerators:
            check_accelerators(con, round_version, benchmark, accelerators)
        report = write_report(con, round_version, benchmark, Path(args.out), accelerators)
    print(f"report: {report.html}")
    for path in report.pngs.values():
        print(f"chart:  {path}")
    for note in report.notes:
        print(f"note:   {note}")
    return 0


def _inference(args: argparse.Namespace, base, round_version: str) -> int:
    from pathlib import Path

    import duckdb

    from pipelines.commands import UsageError, unknown
    from pipelines.lib.report.inference import write_inference_report
    from pipelines.lib.warehouse.query import connect_published

    with connect_published(base) as con:
        try:
            rounds = [r for (r,) in con.execute("select distinct round from fct_inference_result order by 1").fetchall()]
        except duckdb.CatalogException:  # a warehouse published before Inference was loaded
            rounds = []
        if round_version not in rounds:
            raise UsageError(f"Inference round {round_version} is not loaded in this warehouse\n"
                             f"loaded Inference rounds: {', '.join(rounds) or '(none)'}\n"
                             f"`mlperf-warehouse refresh --suites inference --rounds {round_version}` loads it")
        for field, wanted in (("model", args.model), ("scenario", args.scenario)):
            if wanted:
                present = [v for (v,) in con.execute(f"select distinct {field} from fct_inference_result "
                                                     "where round = ? order by 1", [round_version]).fetchall()]
                if wanted not in present:
                    raise unknown(field, wanted, present, f"(in Inference {round_version})")
        path, groups = write_inference_report(con, round_version, Path(args.out), args.model, args.scenario)
    print(f"report: {path} ({len(groups)} model and scenario groups, "
          f"{sum(len(g['rows']) for g in groups)} results)")
    return 0
