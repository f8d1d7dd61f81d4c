"""The structures, their attributes and the observed views, written out from the registries
themselves (`emc structures`; the reference section of docs/writing-models.md, which a test keeps
equal to this), so the documentation never goes stale."""
from __future__ import annotations

from dataclasses import replace

from emc.spec.parse import parse_text
from emc.spec.structure import Attribute, Binding, Structure, coerce_arg
from emc.structures.registry import STRUCTURES


def example_binding(structure: Structure) -> Binding:
    """The structure bound as in its example declaration (`latent z : chain(x, states=45)`)."""
    latent = parse_text(f"model example\n{structure.example}\n", "<example>").latents[0]
    positional = [a for a in latent.args if a.form in ("positional", "from")]
    if structure.uses_from:
        target, source = positional[0].value
        observed = {"target": target, "source": source}
    else:
        observed = {role: a.value for role, a in zip(structure.observed_roles, positional)}
    given = {a.name: a.value for a in latent.args if a.form == "keyword"}
    args = {spec.name: coerce_arg(spec, given.get(spec.name, spec.default))[0] for spec in structure.args}
    return Binding(structure, latent.name, observed, args)


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "required" if value is None else str(value)


def _settings(spec) -> tuple:
    """The values an argument can take when it switches a feature: a flag's two, an enumeration's
    choices, the values it lists for the reference (`labels=10`)."""
    return (False, True) if spec.kind == "bool" else spec.choices or spec.listed_values


def all_attributes(structure: Structure) -> dict[str, tuple[Attribute, str]]:
    """Every attribute the structure can give its parts, with the setting it needs ('' when the
    example declaration has it, else e.g. `order=2`): the example binding, then each flag or
    enumerated argument switched to each of its other values (`order=2`, `jump=yes`). Listed as
    the structure lists them with all those settings on."""
    binding = example_binding(structure)
    base = structure.attributes(binding)
    needs = {path: "" for path in base}
    switched = {}
    alternatives = {}  # settings that make another model (spantree labels=10): their own attributes
    for spec in structure.args:
        for value in _settings(spec):
            if value == binding.args[spec.name]:
                continue
            other = structure.attributes(replace(binding, args={**binding.args, spec.name: value}))
            setting = f"{spec.name}={_fmt(value)}"
            if not set(base) <= set(other):
                alternatives.update({path: (attr, setting) for path, attr in other.items() if path not in base})
                continue
            added = set(other) - set(needs)
            if added:
                needs.update({path: setting for path in added})
                switched[spec.name] = value
    full = replace(binding, args={**binding.args, **switched})
    attrs = structure.attributes(full)
    assert set(attrs) == set(needs), f"{structure.name}: settings that add attributes do not combine"
    return {**{path: (attr, needs[path]) for path, attr in attrs.items()}, **alternatives}


def views_markdown() -> str:
    from emc.io.views import DENSE_VIEW, VIEWS

    rows = ["| view | meaning |", "| --- | --- |"]
    rows += [f"| `.{v.name}{'(n)' if v.takes_length else ''}` | {v.help} |" for v in VIEWS.values()]
    rows.append(f'| `.{DENSE_VIEW}("file")` | inside `features(...)` only, and last: the word\'s vector from a file of '
                "`word value value ...` lines (its own, else its lowercase form's; a word without one gets none), "
                "one real-valued feature per dimension; the path is relative to where emc runs (a saved model "
                "keeps the file it was fitted with) |")
    return "\n".join(rows) + "\n"


def pair_views_markdown() -> str:
    from emc.io.views import PAIR_VIEWS

    rows = ["| pair feature | fires when |", "| --- | --- |"]
    rows += [f"| `pair.{v.name}{'(n)' if v.takes_length else ''}` | {v.help} |" for v in PAIR_VIEWS.values()]
    return "\n".join(rows) + "\n"


def catalog_markdown() -> str:
    out = ["Observed views (after any attribute whose role says `views apply`, and inside `features(...)` after "
           "one whose role says `views apply in features`; they chain, as in `x.lower.suffix(2)`, and each gets "
           "its own vocabulary):\n", views_markdown(),
           "Pair features (inside `features(...)` of a block whose outcome and context are words, such as "
           "`P(a.target | a.source)`; each is one weight shared by every row):\n", pair_views_markdown()]
    for structure in STRUCTURES.values():
        out.append(f"### `{structure.signature}`\n")
        out.append(f"{structure.help}\n")
        out.append(f"Example: `{structure.example}`; observed data of kind {' or '.join(structure.input_kinds)}.\n")
        if structure.args:
            out.append("| argument | default | meaning |\n| --- | --- | --- |")
            out += [f"| `{a.name}` | {_fmt(a.default)} | {a.help} ({a.describe()}) |" for a in structure.args]
            out.append("")
        out.append("| attribute | role | values | slot | meaning |\n| --- | --- | --- | --- | --- |")
        for path, (attr, needs) in all_attributes(structure).items():
            role = (attr.role + (", numeric" if attr.numeric else "") + (", views apply" if attr.tokens_of else "")
                    + (", views apply in features" if attr.feature_views else ""))
            meaning = attr.help + (f"; only with `{needs}`" if needs else "")
            out.append(f"| `{path}` | {role} | `{attr.space}` | {attr.slot or 'any'} | {meaning} |")
        out.append("")
        out.append("Slots: " + "; ".join(f"`{s.name}` ({s.help})" for s in structure.slots) + ".\n")
    out.append(rule_programs_markdown())
    return "\n".join(out)


def rule_programs_markdown() -> str:
    """The structures written as rules in the reference specs (emc.specs, emc.specs.rules): each
    one's spec, signature and parts with their attributes."""
    from importlib import resources

    from emc.spec.parse import parse_text
    from emc.structures.rules.program import check_program

    def refuse(pos, message, hint=None):
        raise ValueError(f"a reference rule program fails its check: {message}")

    out = ["### Structures written as rules\n",
           "Written in the spec itself (\"Writing your own structure\"); these come with emc:\n",
           "| spec | structure | parts and their attributes |\n| --- | --- | --- |"]
    for package, prefix in (("emc.specs", "specs/"), ("emc.specs.rules", "specs/rules/")):
        for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".em"):
                continue
            spec = parse_text(entry.read_text(encoding="utf-8"), entry.name)
            for decl in spec.structures:
                program = check_program(decl, refuse)
                args = ", ".join([*decl.observed, *(f"{name}={value}" for name, value, _ in decl.args)])
                parts = "; ".join(f"`{r.name}`: " + ", ".join([*r.params, *(a.name for a in r.where)])
                                  for r in program.parts)
                out.append(f"| `{prefix}{entry.name}` | `{decl.name}({args})` | {parts} |")
    return "\n".join(out) + "\n"
