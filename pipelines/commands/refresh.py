"""`mlperf-warehouse refresh`: run the definitions' Dagster jobs in-process on the warehouse's Dagster
instance, then publish the warehouse."""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from datetime import date

from pipelines.commands import add_warehouse_dir
from pipelines.lib.mlperf.suites import SUITES, suite_named

EXAMPLES = """examples:
  mlperf-warehouse refresh
  mlperf-warehouse refresh --rounds v4.1,v5.0 --no-prices
  mlperf-warehouse refresh --suites hpc --rounds v1.0,v3.0   # MLPerf HPC rounds only
  mlperf-warehouse refresh --suites training,inference       # MLPerf Inference is opt-in (GB-sized archives)
  mlperf-warehouse refresh --results-url-template 'file:///data/training_results_{version}.tar.gz'
  MLPERF_DEBUG=1 mlperf-warehouse refresh --rounds v5.0   # with Dagster's tracebacks
  mlperf-warehouse ui                                     # the refresh's runs, assets and checks in Dagster's UI"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "refresh", help="fetch, parse, validate, build and publish the warehouse",
        description="Download each round's results archive (and the cloud price lists), parse and validate them, "
        "build the warehouse and publish it if every SQL test passes. Exit 1 when a source failed. The runs are "
        "recorded in the Dagster instance in DAGSTER_HOME, else <warehouse>/dagster: `mlperf-warehouse ui` shows them.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", metavar="V,V", help="comma-separated rounds, e.g. v4.1,v5.0 (default: MLPERF_ROUNDS "
                   "and MLPERF_HPC_ROUNDS, else every known round). Without --suites, a round goes to each suite "
                   "whose configured rounds list it (to Training when none does)")
    p.add_argument("--suites", metavar="S,S", help=f"comma-separated suites: {', '.join(SUITES)} (default: "
                   f"MLPERF_SUITES, else {','.join(s.name for s in SUITES.values() if s.loaded_by_default)})")
    for suite in SUITES.values():  # --results-url-template (Training), --hpc-results-url-template, ...
        p.add_argument(suite.results_flag, metavar="URL", type=template_flag("{version}", f"{suite.label} results"),
                       help=f"where MLPerf {suite.label} archives are: a URL with {{version}}; http(s), file:// or a "
                       f"path (default: {suite.results_variable}, else GitHub's {suite.repository}_{{version}})")
    p.add_argument("--rules-url-template", metavar="URL", type=template_flag("{ref}", "rules"),
                   help="where the rules are: a URL with {ref} for the mlcommons/logging archive each round was "
                        "scored with (default: MLPERF_RULES_URL_TEMPLATE, else GitHub's archive of the ref)")
    p.add_argument("--trust-rules-ref", action="append", default=[], metavar="REF",
                   help="use the rules archive of this mlcommons/logging ref although its content is not the digest it "
                        "is pinned to (rules_refs.csv's, or the one pinned on first use, which it re-pins); repeatable")
    p.add_argument("--accept-shrink", action="store_true",
                   help="publish rounds whose results that count shrank sharply against the published build "
                        "(or MLPERF_ACCEPT_SHRINK=1)")
    p.add_argument("--no-prices", action="store_true", help="skip the cloud price lists")
    p.add_argument("--full", action="store_true",
                   help="run every job even when nothing changed since the last complete refresh (by default such "
                        "a refresh checks each source with a conditional GET and stops there, without Dagster)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def template_flag(placeholder: str, what: str):
    """An argparse `type` for a URL template flag, checked as its setting is (`rounds.url_template`): a bad one is
    a usage error naming the flag."""
    def parse(text: str) -> str:
        from pipelines.lib.mlperf.rounds import url_template

        try:
            return url_template(text, "", placeholder, what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def run(args: argparse.Namespace) -> int:
    from pipelines.lib.io.paths import warehouse_dir
    from pipelines.lib.io.redaction import redact
    from pipelines.lib.mlperf.rounds import results_url_template
    from pipelines.lib.mlperf.rules import rules_url_template
    from pipelines.lib.warehouse import preflight

    configured = args.settings  # the environment's: what the pre-flight's fingerprint records
    try:
        by_suite = rounds_by_suite(args, configured)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    started = time.perf_counter()
    base = warehouse_dir()
    if not args.rounds:
        by_suite, note = with_listed_rounds(by_suite, configured, base)
        if note:  # beside the progress lines: what the refresh does, not its outcome
            from pipelines.lib.warehouse.summary import readable_error

            print(f"rounds: {readable_error(note)}", file=sys.stderr)
    settings = with_flags(configured, args, by_suite)
    sources = settings.sources
    template = {name: results_url_template(sources.suite(name).results_url_template) for name in SUITES}
    rules_template = rules_url_template(sources.rules_url_template)
    # recorded in the pre-flight manifest, as every record, without a URL's credentials (compared as recorded):
    # the suite that takes unlisted rounds at the top (as before there were suites), each other one by its name
    first = next(suite for suite in SUITES.values() if suite.takes_unlisted_rounds)
    request = preflight.request_key(by_suite[first.name], redact(template[first.name]), redact(rules_template),
                                    prices=not args.no_prices, settings=configured.fingerprint())
    request["trusted_rules_refs"] = sorted(set(args.trust_rules_ref))
    request |= {name: {"rounds": by_suite[name], "results_template": redact(template[name])}
                for name in SUITES if name != first.name}
    if not (args.full or args.accept_shrink) and _nothing_changed(base, request):
        print(f"nothing changed since the last complete refresh: every source unchanged upstream, "
              f"no Dagster run started (--full runs every job anyway)\n  {base / 'mlperf.duckdb'}")
        print(f"total {time.perf_counter() - started:.1f}s")
        return 0
    # Whatever this refresh changes before it ends (a new archive downloaded, a round staged) must not
    # let the next one skip: the record goes now and comes back only if this refresh fully succeeds,
    # even if it is killed part-way.
    preflight.forget(base)

    from pipelines.lib.mlperf.scoring_pool import ScoringPool
    from pipelines.lib.mlperf.stage import round_sources
    from pipelines.runner.jobs import refresh

    # the rounds' scoring processes end with the refresh, not at interpreter exit
    with ScoringPool(), Progress(sum(map(len, by_suite.values())), base / "raw", settings.debug) as progress:
        summary = refresh(settings, prices=not args.no_prices, progress=lambda msg: progress.message(redact(msg)))
    if summary.ok:  # the next refresh may skip Dagster if nothing changes meanwhile
        from pipelines.defs.resources import results_source_from_settings

        github = results_source_from_settings(settings).github()
        fetched = [s for name, suite in SUITES.items() for r in by_suite[name]
                   for s in round_sources(r, template[name], rules_template, base, suite, github)]
        preflight.record(base, request, fetched, date.today().isoformat() if not args.no_prices else None)
    print(redact(summary.render()))
    total = time.perf_counter() - started
    outputs = sum(s.seconds for s in summary.steps if s.name == "outputs")
    print(f"total {total:.1f}s" + (f" (published after {total - outputs:.1f}s, then outputs {outputs:.1f}s)"
                                   if summary.published else ""))
    return 0 if summary.ok else 1


def rounds_by_suite(args: argparse.Namespace, settings) -> dict[str, list[str]]:
    """Each suite's rounds of this refresh, by suite name (empty for a suite not picked).
    `--suites` picks the suites (default: the `suites` setting); `--rounds` the rounds of each picked suite.
    Given rounds without `--suites` go to each suite whose configured rounds list them; a round no other suite
    lists goes to the suite that takes unlisted rounds (`Suite.takes_unlisted_rounds`: Training)."""
    from pipelines.commands import parse_rounds

    suites = ([suite_named(s).name for s in args.suites.split(",") if s.strip()] if args.suites
              else list(settings.sources.suites))
    if not suites:
        raise ValueError(f"--suites names no suite ({', '.join(SUITES)})")
    configured = {name: list(settings.sources.suite(name).rounds) for name in SUITES}
    if not args.rounds:
        return {s: (configured[s] if s in suites else []) for s in configured}
    given = parse_rounds(args.rounds)
    if args.suites:
        return {s: (given if s in suites else []) for s in configured}
    picked = {name: [r for r in given if name in suites and r in configured[name]]
              for name, suite in SUITES.items() if not suite.takes_unlisted_rounds}
    claimed = {r for rounds in picked.values() for r in rounds}
    for name, suite in SUITES.items():
        if suite.takes_unlisted_rounds:
            picked[name] = [r for r in given if name in suites and (r in configured[name] or r not in claimed)]
    return {name: picked[name] for name in SUITES}


def with_flags(settings, args: argparse.Namespace, by_suite: dict[str, list[str]]):
    """The settings of this refresh: the operator's with the refresh's flags applied, once. Each suite's rounds
    are this refresh's (`by_suite`), its results URL template its flag's where given (made from SUITES in
    `register`); the trusted rules refs are the setting's and the flags'."""
    sources = settings.sources
    return settings.replaced(
        suites=[name for name in SUITES if by_suite[name]],
        **{suite.rounds_setting: by_suite[name] for name, suite in SUITES.items()},
        **{suite.results_setting: getattr(args, suite.results_setting) for suite in SUITES.values()},
        rules_url_template=args.rules_url_template,
        trust_rules_refs=sorted(set(sources.trust_rules_refs) | set(args.trust_rules_ref)),
        accept_shrink=args.accept_shrink or sources.accept_shrink)


def with_listed_rounds(by_suite: dict[str, list[str]], settings, base) -> tuple[dict[str, list[str]], str]:
    """A suite left at its default rounds also loads every round GitHub lists for it now (from the oldest round
    its layout supports on): a new round is refreshed by default without waiting for anyone to configure it.
    Rounds a user configured stay exactly those. Returns the rounds and a line saying what was added or why
    nothing could be."""
    from pipelines.lib.mlperf.discovery import listed_rounds
    from pipelines.lib.mlperf.rounds import round_sort_key
    defaults = [name for name, suite in SUITES.items()
                if by_suite[name] and list(settings.sources.suite(name).rounds) == list(suite.default_rounds)]
    if not defaults:
        return by_suite, ""
    token = settings.secrets.github_token.get_secret_value() if settings.secrets.github_token else None
    listed, problem = listed_rounds(base, api_url=settings.sources.github_api_url, token=token)
    added = []
    for name in defaults:
        suite = SUITES[name]
        new = [r for r in (listed or {}).get(name, [])
               if round_sort_key(r) >= round_sort_key(suite.oldest_round) and r not in by_suite[name]]
        by_suite = by_suite | {name: sorted(by_suite[name] + new, key=round_sort_key)}
        added += [suite.round_label(r) for r in new]
    found = f"rounds GitHub lists beyond the defaults: {', '.join(added)}" if added else ""
    unread = f"the default rounds only ({problem})" if problem and listed is None else problem
    return by_suite, "; ".join(filter(None, (found, unread)))


def _nothing_changed(base, request: dict) -> bool:
    """The pre-flight, under the refresh lock; the outcome is recorded for `status` like any refresh's."""
    from pipelines.lib.io.locking import refresh_lock
    from pipelines.lib.warehouse import preflight
    from pipelines.lib.warehouse.status import record_refresh_outcome

    if not base.exists():
        return False
    with refresh_lock(base):
        if preflight.unchanged_since_last_refresh(base, request) is not None:
            return False
        record_refresh_outcome(base, True, "nothing changed since the last complete refresh; no Dagster run",
                               steps=[], published=False)
        return True


_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_DONE = re.compile(r": (ok|FAILED) in [\d.]+s")


class Progress:
    """What the refresh is doing, on stderr. On a terminal: a live `rich` display of the rounds
    parsed so far and of the bytes downloaded with their rate (read from the downloads' partial
    files, so the download code needs no hook); it disappears when done, leaving the summary.
    Elsewhere (a log, CI): one plain line as each step starts."""

    def __init__(self, rounds: int, raw_dir, debug: bool = False) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.live = self.console.is_terminal and not debug
        self.rounds, self.raw_dir = rounds, raw_dir
        self._stop = threading.Event()

    def __enter__(self) -> Progress:
        if not self.live:
            return self
        from rich.progress import (
            BarColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichProgress

        self.bar = RichProgress(SpinnerColumn(), TextColumn("{task.description:<8}", style="bold"), BarColumn(bar_width=20),
                                TextColumn("{task.fields[count]:>5}"), TextColumn("{task.fields[note]}"),
                                TimeElapsedColumn(), console=self.console, transient=True)
        self.bar.start()
        self.round_task = self.bar.add_task("rounds", total=self.rounds, count=f"0/{self.rounds}", note="")
        self.bytes_task = self.bar.add_task("download", total=None, count="", note="", visible=False)
        self.watcher = threading.Thread(target=self._watch_downloads, daemon=True)
        self.watcher.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self._stop.set()
            self.watcher.join(timeout=2)
            self.bar.stop()

    def message(self, text: str) -> None:
        if not self.live:
            if not _DONE.search(text):
                self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        step = _STEP.match(text)
        if step and _DONE.search(text):
            self.bar.update(self.round_task, completed=int(step.group(1)), count=f"{step.group(1)}/{self.rounds}")
        note = text[step.end():].strip() if step else text
        self.bar.update(self.round_task, note=note[:60] + ("…" if len(note) > 60 else ""))

    def _watch_downloads(self) -> None:
        from rich.filesize import decimal

        seen: dict[str, int] = {}  # partial file → its last size; renamed away when complete
        last_total, last_time, rate = 0, time.monotonic(), 0.0
        while not self._stop.wait(0.25):
            try:
                live = list(self.raw_dir.rglob("*.part*"))
                for part in live:
                    seen[str(part)] = part.stat().st_size
            except OSError:  # a partial file renamed between listing and stat: next time
                continue
            total, now = sum(seen.values()), time.monotonic()
            if not seen:
                continue
            rate = 0.7 * rate + 0.3 * (total - last_total) / max(now - last_time, 1e-3)
            last_total, last_time = total, now
            note = f"{decimal(total)} at {decimal(int(rate))}/s" if live else f"{decimal(total)} downloaded"
            self.bar.update(self.bytes_task, visible=True, note=note)
