"""The whole suite's order (tests/conftest.py) relies on the `shared_build` marker: a module that reads the
shared build without it would run early and make a worker wait for the build."""

import ast
import subprocess
import sys

import pytest

from support.markers import names_mark
from support.paths import TESTS_DIR


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
