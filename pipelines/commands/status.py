"""`mlperf-warehouse status`: the published build, its rounds and prices, kept builds, last refresh."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse status
  mlperf-warehouse status --json | jq .last_refresh.steps"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "status", help="show the published build, rounds, price snapshots and last refresh",
        description="What is published (build, rounds, price snapshots), the kept builds, and how the last "
        "refresh went, step by step.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_warehouse_dir(p)
    p.add_argument("--json", action="store_true", help="machine-readable output (the last refresh as a list of steps)")
    p.set_defaults(handler=run)


def structured(status: dict) -> dict:
    """The status for --json: the last refresh as data (its steps), not the printed summary."""
    last = status.get("last_refresh")
    if last and last.get("steps"):
        last = {k: v for k, v in last.items() if k != "detail"}
    elif last:  # recorded by an older version: only the printed text is there
        last = {k: v for k, v in last.items() if k != "detail"} | {"summary_lines": str(last.get("detail", "")).splitlines()}
    return status | {"last_refresh": last}


def render(status: dict) -> str:
    from pipelines.lib.mlperf.suites import HPC, INFERENCE

    lines = []
    if status.get("damaged"):
        published = status["published"] or {}
        lines += [f"published file DAMAGED: {status['path']}: {status['damaged']}",
                  f"  published.json says: build {published.get('build', '?')} built at {published.get('built_at', '?')}",
                  "  the next refresh republishes the newest kept build that opens; or run `mlperf-warehouse rollback`"]
    elif status["built_at"] is None:
        lines.append(f"no warehouse published yet at {status['path']}; run `mlperf-warehouse refresh`")
    else:
        published = status.get("build") or "? (the published file is not a kept build)"
        lines += [f"published: {status['path']}",
                  f"  build:       {published}",
                  f"  built at:    {status['built_at']}",
                  f"  fingerprint: {status['fingerprint']}",
                  f"  rounds ({len(status['rounds'])}): {', '.join(status['rounds']) or 'none'}"]
        for suite in (HPC, INFERENCE):
            rounds = status.get(f"{suite.name}_rounds")
            if rounds:
                lines.append(f"  {suite.label} rounds ({len(rounds)}): {', '.join(rounds)}")
        for provider, fetched_at in status["prices"].items():
            lines.append(f"  prices {provider}: latest snapshot {fetched_at}")
        if status.get("record_behind"):
            lines.append(f"  note: {status['record_behind']}")
    lines.append(f"kept builds ({len(status['builds'])}): " + (", ".join(status["builds"]) or "none"))
    pins = status.get("rules_pinned_on_first_use") or {}
    if pins:  # refs rules_refs.csv does not list, trusted on first use (raw/rules/record.json)
        lines.append(f"rules trusted on first use ({len(pins)}):")
        lines += [f"  {ref}: content {pin.get('sha256', '')[:16]}, first seen {str(pin.get('first_seen', ''))[:10]}, "
                  f"for {', '.join(pin.get('used_for') or [])}" for ref, pin in sorted(pins.items())]
    last = status["last_refresh"]
    if not last:
        lines.append("last refresh: no record")
        return "\n".join(lines)
    lines.append(f"last refresh: {'ok' if last.get('ok') else 'FAILED'} at {last.get('at')}")
    steps = last.get("steps")
    if steps:
        failed = [s for s in steps if not s["ok"]]
        # `warning` is recorded since refreshes ran on the definitions' jobs; older records say it in the text
        warned = [s for s in steps if s["ok"] and s.get("warning", str(s["detail"]).startswith("warning: "))]
        lines.append(f"  {len(steps)} steps: {len(steps) - len(failed)} ok, {len(failed)} failed, {len(warned)} with warnings")
        for s in failed + warned:
            text = f"  {s['name']}: {'FAILED' if not s['ok'] else 'warn'}: {s['detail']}"
            lines.append(text if len(text) <= 159 else text[:158] + "…")
        lines.append(f"  warehouse {'published' if last.get('published') else 'not published'}")
    else:
        lines += ["  " + line for line in str(last.get("detail", "")).splitlines()]
    return "\n".join(lines)


def team_status() -> dict:
    """{"team": the team catalog's kept snapshots} in team mode (an unreachable catalog says why), else {}."""
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is None:
        return {}
    from pipelines.lib.warehouse.lake_publish import team_status as lake_status

    try:
        return {"team": lake_status(catalog)}
    except Exception as exc:  # noqa: BLE001 - the local status is still worth showing
        return {"team": {"catalog": catalog.shown, "error": f"{type(exc).__name__}: {exc}"}}


def render_team(team: dict) -> list[str]:
    if team.get("error"):
        return [f"team catalog {team['catalog']}: UNREACHABLE: {team['error']}"]
    lines = [f"team catalog {team['catalog']} (data path {team['data_path']}): "
             f"current snapshot {team['current'] if team['current'] is not None else 'none'}"]
    for s in team["snapshots"]:
        lines.append(f"  snapshot {s['snapshot']} at {s['at'][:19]}: {s['kind']} of build {s['build']} "
                     f"(built {str(s['built_at'])[:19]}): {s['changes']}")
    return lines


def _with_team(status: dict) -> list[str]:
    """Team mode: the catalog's snapshots, after the local build's status where this machine has one (a reader's
    machine has none, and needs none)."""
    if status["built_at"] is None and not status.get("damaged") and not status["builds"]:
        return [f"no local build at {status['path']} (team mode: the team catalog is the warehouse)",
                *render_team(status["team"])]
    return [render(status), *render_team(status["team"])]


def run(args: argparse.Namespace) -> int:
    from pipelines.lib.io.jsonsafe import dumps_strict
    from pipelines.lib.warehouse.status import warehouse_status

    status = warehouse_status(warehouse_base(args))
    status |= team_status()
    if args.json:  # strict JSON: NaN and ±Infinity (none expected) would be null
        print(dumps_strict(structured(status), indent=2))
    else:
        print("\n".join(_with_team(status)) if "team" in status else render(status))
    return 0
