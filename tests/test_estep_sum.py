"""estep_sum (emc/codegen/abi.py): the E-step under sum that the batch and online loops call in
estep_example's place (emc/runtime/kernels.py: estep_for). Its semiring is a constant, so numba
drops the branches only hard EM and sampling take and never compiles what they call (a rules
program's read-back: seconds of every cold start), while its results stay estep_example's."""
from __future__ import annotations

import importlib.util
import types

import numpy as np

from emc.codegen.render import _environment
from emc.runtime.kernels import estep_for
from emc.structures.semiring import MAX, SUM

# A toy glue whose E-step branches on the semiring as the rules template's does: under sum the
# marginals (_outside), else a read-back (_readback) that nothing else calls.
GLUE = """{% import "_entry_points.j2" as entry %}
{% macro score(entry) %}
    x = ex + 1.0
{% endmacro %}
{% macro run(entry, semiring, result) %}
    {{ result }} = _inside({{ semiring }}, x)
{% endmacro %}
{% macro write(entry) %}
    if semiring == SUM:
        counts[0][0] += _outside(x) * weight
        return log_z
    counts[0][1] += _readback(x) * weight
{% endmacro %}
{% set glue = {"score": score, "run": run, "write": write, "docs": {}} %}
{{ entry.point("estep", glue) }}


{{ entry.point("estep", glue, sum_only=true) }}
"""

HEADER = '''import numpy as np
from numba import njit

from emc.structures.semiring import MAX, SUM


@njit(cache=False)
def _inside(semiring, x):
    return np.log(x) if semiring == SUM else np.log(x) - 1.0


@njit(cache=False)
def _outside(x):
    return 2.0 * x


@njit(cache=False)
def _readback(x):
    return 3.0 * x


'''


def _toy_module(tmp_path) -> types.ModuleType:
    source = HEADER + _environment().from_string(GLUE).render().replace("@njit(cache=True)", "@njit")
    path = tmp_path / "toy_glue.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toy_glue", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _estep(function, semiring):
    counts = (np.zeros(2), np.zeros(0, np.uint8), np.zeros(0, np.int64))
    empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
    params = (empty_f,) * 5
    log_z = function(np.int64(2), np.zeros(0, np.int32), empty_i, empty_i, params, empty_f, np.int64(semiring), 0.5,
                     counts)
    return log_z, counts[0]


def test_the_sum_entry_point_never_compiles_what_only_other_semirings_call(tmp_path):
    module = _toy_module(tmp_path)
    log_z, counts = _estep(module.estep_sum, SUM)
    assert module._readback.signatures == []  # the other semirings' branch was dropped before typing
    assert module._outside.signatures
    full_log_z, full_counts = _estep(module.estep_example, SUM)
    assert log_z == full_log_z and counts.tolist() == full_counts.tolist()
    assert module._readback.signatures  # estep_example compiles every branch


def test_the_sum_entry_point_runs_under_sum_whatever_it_is_passed(tmp_path):
    module = _toy_module(tmp_path)
    assert _estep(module.estep_sum, MAX)[1].tolist() == _estep(module.estep_example, SUM)[1].tolist()


def test_the_loops_call_the_sum_entry_point_under_sum_only():
    with_sum = types.SimpleNamespace(estep_example=object(), estep_sum=object())
    without = types.SimpleNamespace(estep_example=object())
    assert estep_for(with_sum, SUM) is with_sum.estep_sum
    assert estep_for(with_sum, MAX) is with_sum.estep_example
    assert estep_for(without, SUM) is without.estep_example
