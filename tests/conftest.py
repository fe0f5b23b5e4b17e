import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `support` helpers

SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_MLPERF = SHARED / "mlperf"


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A fresh warehouse directory for one test."""
    base = tmp_path / "warehouse"
    base.mkdir()
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    return base


def needs_shared_mlperf():
    return pytest.mark.skipif(
        not any(SHARED_MLPERF.glob("training_results_v*.tar.gz")),
        reason=f"shared MLPerf archives not found at {SHARED_MLPERF} (../shared beside the checkout)",
    )
