"""The whole suite's order (tests/conftest.py, support/schedule.py): longest module first, the readers of the
shared build once it should be built. It relies on the `shared_build` marker: a module that reads the shared
build without it could run early and make a worker wait for the build."""

import ast
import subprocess
import sys

import pytest

from support.markers import names_mark
from support.paths import TESTS_DIR
from support.schedule import MODULE_SECONDS, measured_seconds, module_order


def _reads_shared_build(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "shared_build"
               for node in ast.walk(tree))


def test_every_module_that_reads_the_shared_build_is_marked():
    readers = {path.relative_to(TESTS_DIR).as_posix(): names_mark(tree, "shared_build")
               for path in TESTS_DIR.rglob("test_*.py")
               if _reads_shared_build(tree := ast.parse(path.read_text(encoding="utf-8")))}
    assert len(readers) >= 4, readers  # the parity modules and the site's: the check finds them
    assert all(readers.values()), [name for name, marked in readers.items() if not marked]


@pytest.mark.slow  # two collections of the whole suite, each in a pytest process of its own
def test_the_fast_lane_skips_importing_only_modules_whose_every_test_is_slow():
    """`-m "not slow"` leaves out the modules whose `pytestmark` is slow (tests/conftest.py); the same expression
    written otherwise imports every module: both select the same tests."""

    def selected(expression: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                               "-m", expression], cwd=TESTS_DIR.parent, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return [line for line in proc.stdout.splitlines() if "::" in line]

    fast, written_otherwise = selected("not slow"), selected("not (slow)")
    assert len(fast) > 500 and fast == written_otherwise


SECONDS = {"build.py": 100.0, "reader_big.py": 60.0, "reader_small.py": 5.0, "long.py": 80.0, "mid.py": 50.0,
           "short.py": 10.0, "tiny.py": 1.0, "other.py": 70.0, "more.py": 40.0}
TESTS = dict.fromkeys(SECONDS, 3) | {"build.py": 20}  # the builder: the reader with the most tests
READERS = {"build.py", "reader_big.py", "reader_small.py"}


def test_the_builder_runs_first_then_the_longest_and_readers_only_after_the_build_s_time_on_each_worker():
    order = module_order(TESTS, READERS, SECONDS, workers=2)
    # before any reader: 80 + 70 + 50 s of other work, the build's 100 s on each of the two workers; then the
    # readers take their place by length
    assert order == ["build.py", "long.py", "other.py", "mid.py", "reader_big.py", "more.py", "short.py",
                     "reader_small.py", "tiny.py"]
    # three workers: 300 s; the readers wait for every other module, and come last, longest first
    assert module_order(TESTS, READERS, SECONDS, workers=3)[-2:] == ["reader_big.py", "reader_small.py"]
    # one process builds before anything else runs: nothing is held back, longest first
    assert module_order(TESTS, READERS, SECONDS, workers=1) == [
        "build.py", "long.py", "other.py", "reader_big.py", "mid.py", "more.py", "short.py", "reader_small.py",
        "tiny.py"]
    # the builder is chosen by its tests, not its time: a reader that waited for the build and measured long
    assert module_order(TESTS, READERS, SECONDS | {"reader_big.py": 500.0}, workers=2)[0] == "build.py"


def test_a_module_never_measured_runs_among_the_longest_and_the_order_is_the_same_in_every_worker():
    known = {m: s for m, s in SECONDS.items() if m != "short.py"}
    order = module_order(TESTS, READERS, known, workers=2)
    assert order.index("short.py") == 1  # counted as long as the longest measured (100 s), before long.py's 80
    assert module_order(dict(reversed(list(TESTS.items()))), READERS, known, workers=2) == order
    assert module_order({"a.py": 1, "b.py": 2}, set(), {}, workers=3) == ["a.py", "b.py"]  # nothing measured yet


def test_the_measured_seconds_name_test_modules_with_a_time_each():
    seconds = measured_seconds()
    assert seconds, f"{MODULE_SECONDS} is missing: python benchmarks/suite_cpu.py --write-module-seconds"
    assert all(name.startswith("tests/") and name.endswith(".py") and value >= 0 for name, value in seconds.items())
