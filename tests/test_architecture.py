"""The layers, read from the syntax tree of every module: imports at the top and inside functions,
and the module names handed to `importlib.import_module` (through which the structure registry
loads a structure's modules). Nothing in emc/structures imports emc/runtime, nothing in
emc/codegen imports emc/structures, no two modules of emc import each other even indirectly, and
neither do two packages (emc.spec's modules counted apart, as they sit at different layers); no
function is longer than 100 lines. Each check is shown to fail on a graph or a source that breaks it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "emc"
MAX_FUNCTION_LINES = 100


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _string_pattern(node: ast.expr) -> str | None:
    """A regular expression for the strings an expression can be: a literal is itself, an
    f-string's replacement fields match any name (`f"emc.structures.{p}.codegen"`); None if the
    expression is neither."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values)
    return None


def _dynamic_imports(tree: ast.Module) -> tuple[list[str], list[int]]:
    """The patterns of the module names passed to `import_module` (a literal, an f-string, or a
    local name assigned one), and the lines of calls whose argument cannot be read that way."""
    assigned: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _string_pattern(node.value) is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(_string_pattern(node.value))
    patterns: list[str] = []
    unread: list[int] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name != "import_module":
            continue
        argument = node.args[0]
        found = ([_string_pattern(argument)] if _string_pattern(argument) is not None
                 else assigned.get(argument.id, []) if isinstance(argument, ast.Name) else [])
        if found:
            patterns += found
        else:
            unread.append(node.lineno)
    return patterns, unread


def imports_of(source: str, name: str, is_package: bool, modules: set[str]) -> tuple[set[str], list[int]]:
    """The emc modules one module imports (a `from a.b import c` names a.b.c when that is a
    module, else a.b; an `import_module` pattern names every module it matches), and the lines of
    `import_module` calls whose argument cannot be read."""
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(source)
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    patterns, unread = _dynamic_imports(tree)
    for pattern in patterns:
        targets += [m for m in modules if re.fullmatch(pattern, m)]
    found: set[str] = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found, unread


def _sources() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """module -> the emc modules it imports; fails naming an `import_module` call it cannot read."""
    sources = _sources()
    graph: dict[str, set[str]] = {}
    unread = []
    for name, path in sources.items():
        graph[name], lines = imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", set(sources))
        unread += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert not unread, f"import_module with a module name the check cannot read (write it as a literal or f-string): {unread}"
    return graph


def package_of(module: str) -> str:
    """The node of the package graph a module belongs to: emc.spec's modules each stand alone
    (ir and errors sit below the structures, check above them); any other module belongs to the
    package directly under emc (emc.runtime.variants.batch -> emc.runtime; emc.cli stays)."""
    if module.startswith("emc.spec."):
        return module
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = packages.setdefault(package_of(module), set())
        edges.update(package_of(t) for t in targets if package_of(t) != package_of(module))
    for targets in list(packages.values()):
        for target in targets:
            packages.setdefault(target, set())
    return packages


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def imports_between(graph: dict[str, set[str]], lower: str, upper: str) -> list[tuple[str, str]]:
    """The imports from modules under `lower` of modules under `upper` (which should be none)."""
    return sorted((m, t) for m, targets in graph.items() if m.startswith(lower + ".")
                  for t in targets if t == upper or t.startswith(upper + "."))


def long_functions(source: str, where: str) -> list[str]:
    """The functions (and methods) of a source longer than MAX_FUNCTION_LINES, from `def` to their last line."""
    return [f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_structure_imports_the_runtime():
    assert imports_between(import_graph(), "emc.structures", "emc.runtime") == []


def test_codegen_imports_no_structure():
    assert imports_between(import_graph(), "emc.codegen", "emc.structures") == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_only_the_job_imports_the_modes():
    """A structure's own fit, decode and starts (emc/runtime/modes/) sit above the ordinary
    driver they use: within the runtime only the job picks them (a start registers itself with
    initialize.py instead of being imported by it)."""
    assert modes_importers(import_graph()) == ["emc.runtime.job"]


def modes_importers(graph: dict[str, set[str]]) -> list[str]:
    """The runtime's modules outside emc.runtime.modes that import a module of it."""
    return sorted(m for m, targets in graph.items()
                  if m.startswith("emc.runtime.") and not m.startswith("emc.runtime.modes")
                  and any(t.startswith("emc.runtime.modes") for t in targets))


def test_no_package_cycle():
    assert cycles(package_graph(import_graph())) == []


def test_no_long_function():
    """In the code written by hand: a program's chart passes, which emc generates (a built-in's
    chart.py), are cut by the generator's own measure (emc/structures/rules/codegen.py: CHUNK_LINES)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not source.startswith("# Generated by emc"):
            found += long_functions(source, str(path.relative_to(ROOT)))
    assert found == []


def test_the_checks_catch_what_they_look_for():
    graph = import_graph()
    assert "emc.runtime.fit" in graph["emc.runtime.job"]  # the graph is read at all
    assert "emc.structures.chain.codegen" in graph["emc.structures.registry"]  # and import_module's f-strings
    broken = {k: set(v) for k, v in graph.items()}
    broken["emc.runtime.initialize"].add("emc.runtime.modes.ibm1")
    assert modes_importers(broken) == ["emc.runtime.initialize", "emc.runtime.job"]
    broken["emc.runtime.state"].add("emc.runtime.job")  # state -> job -> state
    assert any({"emc.runtime.state", "emc.runtime.job"} <= set(c) for c in cycles(broken))
    broken["emc.structures.chain.data"].add("emc.runtime.problem")
    assert imports_between(broken, "emc.structures", "emc.runtime") == [("emc.structures.chain.data", "emc.runtime.problem")]
    broken["emc.codegen.abi"].add("emc.structures.chain.codegen")
    assert ("emc.codegen.abi", "emc.structures.chain.codegen") in imports_between(broken, "emc.codegen", "emc.structures")
    broken["emc.io.views"].add("emc.runtime.sampling")  # runtime -> io -> runtime, no module cycle needed
    assert any({"emc.io", "emc.runtime"} <= set(c) for c in cycles(package_graph(broken)))
    broken["emc.structures.chain.data"].add("emc.spec.check")  # check -> structures -> check
    assert any({"emc.spec.check", "emc.structures"} <= set(c) for c in cycles(package_graph(broken)))


def test_dynamic_imports_are_followed_or_refused():
    modules = {"emc.a", "emc.b.x.data", "emc.b.y.data", "emc.b.y.other"}
    source = ("import importlib\n"
              "def load(p):\n"
              "    name = f'emc.b.{p}.data'\n"
              "    return importlib.import_module(name), importlib.import_module('emc.b.y.other')\n")
    assert imports_of(source, "emc.a", False, modules) == ({"emc.b.x.data", "emc.b.y.data", "emc.b.y.other"}, [])
    hidden = "from importlib import import_module\ndef load(parts):\n    return import_module('.'.join(parts))\n"
    assert imports_of(hidden, "emc.a", False, modules) == (set(), [3])


def test_long_functions_are_found():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    assert long_functions(f"def fits():\n{body}", "f.py") == []
    assert long_functions(f"class C:\n    def too_long(self):\n    {body.replace(chr(10), chr(10) + '    ')}    pass\n",
                          "f.py") == ["f.py:2 too_long (101 lines)"]
