"""The four entry points of the ABI (estep, decode, sample, posterior) are written once, in
emc/codegen/templates/_entry_points.j2: a structure's template supplies its scoring, its DP call and
its write-out (issue 34)."""
import re
from importlib import resources

from emc.codegen.render import _environment

TEMPLATES = resources.files("emc.codegen").joinpath("templates")
ENTRY_POINT = re.compile(r"^def (estep|decode|sample|posterior)_example\(", re.MULTILINE)


def test_templates_do_not_hand_write_the_entry_points():
    writing = [t.name for t in TEMPLATES.iterdir()
               if t.name.endswith(".j2") and ENTRY_POINT.search(t.read_text(encoding="utf-8"))]
    assert writing == []


GLUE = """{% import "_entry_points.j2" as entry %}
{% macro score(entry) %}
    x = _score(ex)
{% endmacro %}
{% macro run(entry, semiring, result) %}
    {{ result }} = dp.run({{ semiring }}, x)
{% endmacro %}
{% macro write(entry) %}
    out[0] = {{ entry }}
{% endmacro %}
{{ entry.points({"score": score, "run": run, "write": write, "docs": {"decode": "The best."},
                 "returns": {"sample": "log_z if x else np.nan"}}) }}
"""

EXPECTED = '''@njit(cache=True)
def estep_example(ex, ints, layout, meta, params, derived, semiring, weight, counts):
    x = _score(ex)
    log_z = dp.run(semiring, x)
    if not log_z > -np.inf:
        return log_z
    out[0] = estep
    return log_z


@njit(cache=True)
def decode_example(ex, ints, layout, meta, params, derived, out):
    """The best."""
    x = _score(ex)
    log_score = dp.run(np.int64(MAX), x)
    out[0] = decode
    return log_score


@njit(cache=True)
def sample_example(ex, ints, layout, meta, params, derived, out):
    x = _score(ex)
    log_z = dp.run(np.int64(ONE_SAMPLE), x)
    out[0] = sample
    return log_z if x else np.nan


@njit(cache=True)
def posterior_example(ex, ints, layout, meta, params, derived, out):
    x = _score(ex)
    log_z = dp.run(np.int64(SUM), x)
    out[0] = posterior
    return log_z
'''


def test_the_shared_part_writes_the_four_entry_points_from_a_structures_glue():
    assert _environment().from_string(GLUE).render() == EXPECTED
