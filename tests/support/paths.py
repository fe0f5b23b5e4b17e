"""Where the tests find the project, their fixtures and the shared data beside the checkout."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
PROJECT_ROOT = TESTS_DIR.parent
FIXTURES = TESTS_DIR / "fixtures"
SHARED = PROJECT_ROOT.parent / "shared"
SHARED_MLPERF = SHARED / "mlperf"
SHARED_PRICES = SHARED / "prices"


def needs_shared_mlperf():
    import pytest

    return pytest.mark.skipif(
        not any(SHARED_MLPERF.glob("training_results_v*.tar.gz")),
        reason=f"shared MLPerf archives not found at {SHARED_MLPERF} (../shared beside the checkout)",
    )
