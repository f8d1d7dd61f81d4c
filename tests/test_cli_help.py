"""`emc fit --help` teaches every EM variant, with the defaults the code really has."""
from __future__ import annotations

import re

from emc.cli import FIT_EPILOG
from emc.runtime.settings import FitSettings
from emc.runtime.variants import VARIANTS


def test_fit_help_names_every_algorithm_with_its_paper():
    section = FIT_EPILOG.split("algorithms (--algorithm):")[1].split("\ndata:")[0]
    listed = re.findall(r"^  (\w+) ", section, re.M)
    assert listed == list(VARIANTS)
    for name, variant in VARIANTS.items():
        entry = section.split(f"  {name} ", 1)[1]
        first_author = variant.paper.split()[0]
        assert first_author in entry, (name, variant.paper)


def test_fit_help_states_the_real_defaults():
    d = FitSettings()
    for flag, value in [("--iterations", d.iterations), ("--tolerance", d.tolerance), ("--passes", d.passes),
                        ("--alpha", d.alpha), ("--batch-size", d.batch_size), ("--block-size", d.block_size),
                        ("--beta-min", d.beta_min),
                        ("--beta-factor", d.beta_factor), ("--anneal-tolerance", d.anneal_tolerance),
                        ("--vb-alpha", d.vb_alpha)]:
        stated = re.findall(rf"{flag}\s+([0-9.e-]+)", " ".join(FIT_EPILOG.split()))
        assert stated and all(float(s) == value for s in stated), (flag, stated, value)


def test_each_option_names_variants_that_exist_and_reaches_the_command_line():
    """The settings' metadata is the one place the options are declared: every variant it names
    exists, and each option is an `emc fit` flag with the setting's default."""
    from emc.cli import build_parser
    from emc.runtime.settings import fit_options

    fit_parser = build_parser()._subparsers._group_actions[0].choices["fit"]
    flags = {action.dest: action for action in fit_parser._actions}
    for f in fit_options():
        assert set(f.metadata["variants"]) <= set(VARIANTS), f.name
        assert flags[f.name].default == f.default and flags[f.name].help.endswith(f.metadata["help"]), f.name
