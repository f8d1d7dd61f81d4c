"""A DP called through a function pointer (emc/structures/pointers.py): the same results as a direct
call, errors that still reach the caller, callers cached by numba that load and run in a fresh
process, and callers whose code holds a call, not the DP's body."""
import os
import subprocess
import sys
import textwrap

import numpy as np
from numba import njit

from emc.structures.pointers import by_pointer

MODULE = textwrap.dedent('''
    import numpy as np
    from numba import njit
    from emc.structures.pointers import by_pointer

    @njit(cache=True)
    def total(values, scale):
        if scale < 0:
            raise ValueError("a negative scale")
        out = 0.0
        for v in values:
            out += np.exp(v) * scale
        return out

    total_by_pointer = by_pointer(total)

    @njit(cache=True)
    def caller(values, scale):
        return total_by_pointer(values, scale) + 1.0
''')

RUN = textwrap.dedent('''
    import numpy as np
    import pointed
    print(repr(pointed.caller(np.array([0.0, 1.0]), 2)))
    try:
        pointed.caller(np.array([0.0]), -1)
    except ValueError as error:
        print("raised:", error)
    print(len(pointed.caller.stats.cache_hits), "cache hits")
''')


@njit
def _sum_of_squares(values):
    return float(np.sum(values * values))


_sum_of_squares_by_pointer = by_pointer(_sum_of_squares)


@njit
def _through_pointer(values):
    return _sum_of_squares_by_pointer(values)


def test_a_call_through_a_pointer_returns_what_a_direct_call_returns():
    values = np.arange(5.0)
    assert _through_pointer(values) == _sum_of_squares(values) == 30.0
    # the caller's machine code calls the DP's symbol and holds none of its body (no sum loop)
    code = next(iter(_through_pointer.inspect_llvm().values()))
    assert "emc_pointer." in code
    assert "fmul" not in code


def test_a_cached_caller_loads_in_a_fresh_process_and_errors_still_reach_it(tmp_path):
    (tmp_path / "pointed.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env, capture_output=True, text=True)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    expected = repr(2.0 * (1.0 + np.e) + 1.0)
    cold, warm = (run.stdout.splitlines() for run in runs)
    assert cold == [expected, "raised: a negative scale", "0 cache hits"]
    assert warm == [expected, "raised: a negative scale", "1 cache hits"]  # the caller came from numba's cache
