"""Where the tests find the project, their fixtures and the shared data beside the checkout."""

import os
import shutil
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
PROJECT_ROOT = TESTS_DIR.parent
FIXTURES = TESTS_DIR / "fixtures"
SHARED = PROJECT_ROOT.parent / "shared"
SHARED_MLPERF = SHARED / "mlperf"
SHARED_PRICES = SHARED / "prices"
# The folders of modules the test processes import from the checkout (compiled before any test runs: conftest.py)
IMPORTED_FOLDERS = tuple(PROJECT_ROOT / f for f in ("pipelines", "schemas", "tests/support"))


def needs_shared_mlperf():
    import pytest

    return pytest.mark.skipif(
        not any(SHARED_MLPERF.glob("training_results_v*.tar.gz")),
        reason=f"shared MLPerf archives not found at {SHARED_MLPERF} (../shared beside the checkout)",
    )


def copy_warehouse(source: Path, target: Path) -> Path:
    """A copy of the warehouse directory `source` into `target` (created, or empty), as the warehouse has it:
    a file that is a hard link of another (the published file and its build) stays one, symlinks stay links."""
    copied: dict[tuple[int, int], str] = {}  # (device, inode) of a source file → its copy

    def copy(src: str, dst: str) -> str:
        stat = os.stat(src)
        first = copied.setdefault((stat.st_dev, stat.st_ino), dst)
        if first != dst:
            os.link(first, dst)
            return dst
        return shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=copy, dirs_exist_ok=True)
    return target
