"""Shared pieces of the benchmarks: where the corpora are, the machine's peak, timing helpers."""
from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("EMC_SHARED_DATA", ROOT.parent / "shared" / "data"))


def require_data() -> Path:
    if not DATA.is_dir():
        raise SystemExit(f"the real corpora are missing: expected them in {DATA} (set EMC_SHARED_DATA)")
    return DATA


def peak_gflops_per_core() -> float:
    """Double-precision peak of one core: 2 FMA units x 4 doubles (AVX2) x 2 flops x clock."""
    mhz = 0.0
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz") and not mhz:
                mhz = float(line.split(":")[1])
            if line.startswith("flags") and not flags:
                flags = line
    lanes = 8 if " avx512f" in flags else 4 if " avx2" in flags else 2
    fma = 2 if " fma" in flags else 1
    return 2 * lanes * fma * mhz / 1000


@contextmanager
def timed(label: str, out: dict):
    t0 = time.perf_counter()
    yield
    out[label] = time.perf_counter() - t0


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(re.findall(r"\d+", line)[0]) / 1024
    return float("nan")
