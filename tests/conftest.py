"""Shared fixtures. Real corpora are read from ../shared/data (CI always has it); a test that needs
it fails with a message when it is missing, never skips silently."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("EMC_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the real corpora are missing: expected them in {SHARED_DATA} "
                    f"(set EMC_SHARED_DATA to their folder)")
    return SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Generated modules and numba's cache go to a per-session folder unless EMC_CACHE_DIR is set
    (set it yourself to reuse compiled code across runs of the suite; .ci/run does not)."""
    if not os.environ.get("EMC_CACHE_DIR"):
        os.environ["EMC_CACHE_DIR"] = str(tmp_path_factory.mktemp("emc-cache"))
    yield
