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
           "short.py": 10.0, "tiny.py": 1.0}
READERS = {"build.py", "reader_big.py", "reader_small.py"}


def test_the_builder_runs_first_then_the_longest_and_readers_only_after_the_build_s_time_on_the_other_workers():
    order = module_order(SECONDS, READERS, SECONDS, workers=3)
    assert order[0] == "build.py"
    # before any reader: 80 + 50 + 10 + ... until 2 workers x 100 s; then the readers take their place by length
    assert order == ["build.py", "long.py", "mid.py", "short.py", "tiny.py", "reader_big.py", "reader_small.py"]
    # with two workers the hold is one build's time: the big reader comes after 80 + 50 s of other work
    assert module_order(SECONDS, READERS, SECONDS, workers=2) == [
        "build.py", "long.py", "mid.py", "reader_big.py", "short.py", "reader_small.py", "tiny.py"]
    # one process builds before anything else runs: nothing is held back, longest first
    assert module_order(SECONDS, READERS, SECONDS, workers=1) == [
        "build.py", "long.py", "reader_big.py", "mid.py", "short.py", "reader_small.py", "tiny.py"]


def test_a_module_never_measured_runs_among_the_longest_and_the_order_is_the_same_in_every_worker():
    known = {m: s for m, s in SECONDS.items() if m != "short.py"}
    order = module_order(SECONDS, READERS, known, workers=3)
    assert order.index("short.py") == 1  # counted as long as the longest measured (100 s), before long.py's 80
    assert module_order(reversed(list(SECONDS)), READERS, known, workers=3) == order
    assert module_order(["a.py", "b.py"], set(), {}, workers=3) == ["a.py", "b.py"]  # nothing measured yet


def test_the_measured_seconds_name_test_modules_with_a_time_each():
    seconds = measured_seconds()
    assert seconds, f"{MODULE_SECONDS} is missing: python benchmarks/suite_cpu.py --write-module-seconds"
    assert all(name.startswith("tests/") and name.endswith(".py") and value >= 0 for name, value in seconds.items())
