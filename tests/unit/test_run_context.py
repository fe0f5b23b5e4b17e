"""The run context (pipelines/lib/io/context.py) is the one process state of pipelines/lib: the accessors read the
active one, an inner activation gives the outer back, scoring workers receive their parent's, and no other module
of lib keeps state it writes at run time."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from pipelines.lib.io.context import RunContext, activate, amend, current
from pipelines.lib.io.hosts import allowed_hosts
from pipelines.lib.io.limits import LIMITS, limit, share
from pipelines.lib.io.paths import DEFAULT_WAREHOUSE_DIR, warehouse_dir
from pipelines.lib.io.redaction import MASK, redact, register_secret, register_url_credentials
from pipelines.lib.warehouse.team import BiMirror, TeamCatalog, bi_mirror, team_catalog
from support.paths import PROJECT_ROOT

OUTER_SECRET, INNER_SECRET, RUN_TIME_SECRET = "outer-Secret-41", "inner-Secret-42", "run-time-Secret-43"


def _outer(tmp_path: Path) -> RunContext:
    return RunContext(warehouse_dir=tmp_path / "outer", limits={"max_line_bytes": 4096, "max_shrink": 0.5},
                      allowed_hosts=[" Mirror.Example ", ""], secrets=frozenset({OUTER_SECRET}),
                      team_catalog=TeamCatalog(f"postgresql://u:{OUTER_SECRET}@db.example/lake"),
                      bi_mirror=BiMirror(f"postgresql://u:{OUTER_SECRET}@bi.example/bi"))


def _seen() -> tuple:
    """What the accessors of lib read now."""
    return (warehouse_dir(), limit("max_line_bytes"), share("max_shrink"), allowed_hosts(), redact(OUTER_SECRET),
            redact(INNER_SECRET), team_catalog(), bi_mirror())


def test_an_inner_activation_restores_the_outer_even_when_it_fails(tmp_path):
    defaults = _seen()
    assert defaults[:4] == (DEFAULT_WAREHOUSE_DIR.resolve(), LIMITS["max_line_bytes"][0], 0.25, frozenset())
    outer = _outer(tmp_path)
    with activate(outer) as active:
        assert active is current() is outer
        in_outer = _seen()
        assert in_outer == ((tmp_path / "outer").resolve(), 4096, 0.5, frozenset({"mirror.example"}), MASK,
                            INNER_SECRET, outer.team_catalog, outer.bi_mirror)
        with pytest.raises(RuntimeError), activate(RunContext(warehouse_dir=tmp_path / "inner",
                                                              secrets=frozenset({INNER_SECRET}))):
            assert _seen() == ((tmp_path / "inner").resolve(), LIMITS["max_line_bytes"][0], 0.25, frozenset(),
                               OUTER_SECRET, MASK, None, None)
            register_secret(RUN_TIME_SECRET)  # an addition to the inner context, gone with it
            assert redact(RUN_TIME_SECRET) == MASK
            raise RuntimeError("the inner run fails")
        assert current() is outer and _seen() == in_outer
        assert redact(RUN_TIME_SECRET) == RUN_TIME_SECRET
        with amend(limits={"max_line_bytes": 8192}):  # one field changed, the others kept
            assert _seen()[:2] == ((tmp_path / "outer").resolve(), 8192) and redact(OUTER_SECRET) == MASK
        assert limit("max_line_bytes") == 4096
    assert _seen() == defaults


def test_redaction_follows_the_active_context(tmp_path):
    text = f"GET https://mirror.example/x?key={OUTER_SECRET} failed"
    assert redact(text) == text
    with activate(_outer(tmp_path)):
        assert OUTER_SECRET not in redact(text) and MASK in redact(text)
        with activate(RunContext()):
            assert redact(text) == text
        register_url_credentials(f"https://reader:{RUN_TIME_SECRET}@mirror.example/{{version}}.tgz")
        assert redact(f"token {RUN_TIME_SECRET}") == f"token {MASK}"
    assert redact(text) == text and redact(f"token {RUN_TIME_SECRET}") == f"token {RUN_TIME_SECRET}"


def test_a_secret_added_twice_leaves_the_context_as_it_was(tmp_path):
    with activate(_outer(tmp_path)) as outer:
        register_secret(OUTER_SECRET)
        register_secret("short")  # under MIN_SECRET_LENGTH: it would mask ordinary words
        assert current() is outer


def test_a_context_pickles_checked_and_never_shows_its_secrets(tmp_path):
    context = _outer(tmp_path)
    assert OUTER_SECRET not in repr(context) and "secrets" not in repr(context)
    assert pickle.loads(pickle.dumps(context)) == context
    with pytest.raises(TypeError):
        context.limits["max_line_bytes"] = 1  # read-only: the context is changed by activating another
    with pytest.raises(ValueError, match="MLPERF_MAX_PARSE_WORKERS must be a whole number"):
        RunContext(limits={"max_parse_workers": 0.5})


@pytest.mark.slow  # starts worker processes
def test_a_scoring_worker_receives_the_limits_and_secrets_of_its_parent(tmp_path):
    from pipelines.lib.mlperf import scoring_pool
    from pipelines.lib.mlperf.round_rules import RoundRules
    from pipelines.lib.mlperf.rules import package_ruleset

    rules = RoundRules(package_ruleset("v4.1"), package_ruleset("v4.1"))
    try:
        scoring_pool.shutdown_pool()
        with activate(_outer(tmp_path)):
            register_secret(RUN_TIME_SECRET)
            pool = scoring_pool.ResultScorer("v4.1", rules, 2).pool
            assert pool is not None
            in_worker = [pool.submit(limit, "max_line_bytes"), pool.submit(warehouse_dir), pool.submit(allowed_hosts),
                         pool.submit(redact, f"{OUTER_SECRET} {RUN_TIME_SECRET}")]
            assert [f.result(timeout=120) for f in in_worker] == [
                4096, (tmp_path / "outer").resolve(), frozenset({"mirror.example"}), f"{MASK} {MASK}"]
            assert scoring_pool.pool_running(2)
        assert not scoring_pool.pool_running(2)  # its workers hold a context no longer active
    finally:
        scoring_pool.shutdown_pool()


# --- no other process state in pipelines/lib ---------------------------------------------------------------------

CONTEXT_MODULE = "pipelines/lib/io/context.py"
# State that is no setting: each a resource or a cache of the process, with why it is module-level.
KNOWN_PROCESS_STATE = {
    # the refresh process's scoring workers, kept from round to round, keyed by the run context they were started under
    "pipelines/lib/mlperf/scoring_pool.py": {"_POOL", "_WORKER_ROUND"},  # _WORKER_ROUND: a worker's unpickled round
    # the deadline of the batch being scored, read deep inside interpreted rule expressions that take no arguments
    "pipelines/lib/mlperf/rule_interpreter.py": {"_DEADLINE"},
    # the catalog connections this process holds its advisory locks on (re-entrant: counted per lock)
    "pipelines/lib/warehouse/catalog_lock.py": {"_held"},
    # the functions rules may call: filled when compliance.py is imported (allow_callable), read at run time
    "pipelines/lib/mlperf/rule_language.py": {"_SAFE_CALLABLES"},
}
_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "deque", "OrderedDict", "Counter", "bytearray"}
_MUTATORS = {"add", "append", "appendleft", "clear", "discard", "extend", "insert", "pop", "popitem", "remove",
             "setdefault", "update"}


def _mutable_module_names(tree: ast.Module) -> set[str]:
    """Names the module binds to a container that can change in place (a list, dict or set and their kin)."""
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        value = getattr(node, "value", None)
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) in _MUTABLE_CALLS)
        names |= {t.id for t in targets if isinstance(t, ast.Name) and mutable}
    return names


def state_written_at_run_time(source: str) -> list[tuple[int, str]]:
    """(line, name) of each module-level name a function of `source` rebinds (`global`) or changes in place."""
    tree = ast.parse(source)
    containers = _mutable_module_names(tree)
    found = []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found += [(node.lineno, name) for name in node.names]
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                for target in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
                    if isinstance(target, ast.Subscript) and getattr(target.value, "id", None) in containers:
                        found.append((node.lineno, target.value.id))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS \
                    and getattr(node.func.value, "id", None) in containers:
                found.append((node.lineno, node.func.value.id))
    return sorted(set(found))


def test_the_scan_names_each_kind_of_run_time_state():
    source = ("CACHE = {}\nSEEN: set[str] = set()\nLIMIT = 3\nWORDS = ('a',)\n"
              "def configure(value):\n    global LIMIT\n    LIMIT = value\n"
              "def remember(key, value):\n    CACHE[key] = value\n    SEEN.add(key)\n    return WORDS.count(key)\n")
    assert state_written_at_run_time(source) == [(6, "LIMIT"), (9, "CACHE"), (10, "SEEN")]


def test_no_module_of_lib_but_the_context_keeps_state_written_at_run_time():
    files = sorted((PROJECT_ROOT / "pipelines" / "lib").rglob("*.py"))
    assert len(files) > 40
    offenders, known = [], {}
    for path in files:
        name = path.relative_to(PROJECT_ROOT).as_posix()
        if name == CONTEXT_MODULE:
            continue
        for line, state in state_written_at_run_time(path.read_text(encoding="utf-8")):
            if state in KNOWN_PROCESS_STATE.get(name, ()):
                known.setdefault(name, set()).add(state)
            else:
                offenders.append(f"{name}:{line} {state}")
    assert offenders == [], f"module-level state written at run time (put it in the run context): {offenders}"
    assert known == KNOWN_PROCESS_STATE  # an entry whose state is gone leaves the list
