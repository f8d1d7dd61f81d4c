"""A structure's DP called from the generated glue through a function pointer, compiled once.

numba links a callee's machine code into every caller's module and optimises and emits it again
there, so a DP called by the glue's `_posterior`, called by `estep_example`, ... is compiled once
per level above it: seconds of every cold start (bench/README.md, "Start-up, round 6": the HMM
aligner's chain DP, 10 of its 15.5 LLVM seconds). A call through `by_pointer(dp)`
instead declares the DP as an external symbol: the DP is compiled (or loaded from numba's cache)
once for the argument types of the call, its address is given to LLVM under a name of its own,
and the callers' code holds a plain call, never the DP's body.

The callers stay cacheable: loading one from numba's cache first registers its symbols again
(numba runs a library's `reload_init` functions before it loads the library), and a symbol's
name carries the argument types, so code built for other types never finds it. A caller's
callers inherit its reload_init when they link its code, so a function compiled later that calls
one calling through a pointer registers the symbol too when it is loaded; numba forgets a cached
library's reload_init once it has run them, which `_keep_reload_init` puts right (else: a
function loaded from the cache, then linked into a new caller, left that caller's cached code
calling an address nobody registered, and the next process crashed). The glue's own cache key
covers the DP's file (emc/runtime/compiled.py), so a changed DP never meets glue built against
the old one; a structure's own modules (the DMV's chart) are cached by numba alone, which does not
look at the files of what they call.

A call costs what any numba call costs (no inlining across it): use it for a whole example's DP,
never inside a DP's loops.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import sys

import llvmlite.binding as llvm
from numba.core import cgutils, types
from numba.core.compiler import CompileResult
from numba.extending import intrinsic


def _keep_reload_init() -> None:
    """CompileResult._rebuild (a function loaded from numba's cache) runs the reload_init it was
    saved with and then builds a library holding none: a caller compiled afterwards links that
    library and inherits nothing (numba.core.codegen: "Parent inherits reload_init"). Give the
    library its reload_init back. Idempotent; a numba whose _rebuild takes no reload_init is left
    as it is."""
    original = CompileResult._rebuild.__func__
    if getattr(original, "keeps_reload_init", False) or "reload_init" not in inspect.signature(original).parameters:
        return
    signature = inspect.signature(original)

    def rebuild(cls, *args, **kwargs):
        result = original(cls, *args, **kwargs)
        reload_init = signature.bind(cls, *args, **kwargs).arguments.get("reload_init")
        if reload_init:
            result.library._reload_init.update(reload_init)
        return result

    rebuild.keeps_reload_init = True
    CompileResult._rebuild = classmethod(rebuild)


_keep_reload_init()


@functools.cache
def _register(module: str, name: str, argument_types: tuple) -> tuple[str, types.Type]:
    """Compile (or load) module.name for the argument types, give LLVM its address under a name
    of its own; that name and the return type. Also the reload_init of every caller of it."""
    dispatcher = getattr(sys.modules[module], name)  # imported already: by its caller's module
    dispatcher.compile(argument_types)
    compiled = dispatcher.overloads[argument_types]
    digest = hashlib.sha256(str(argument_types).encode()).hexdigest()[:16]
    symbol = f"emc_pointer.{module}.{name}.{digest}"
    llvm.add_symbol(symbol, compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name))
    return symbol, compiled.signature.return_type


def _reload(module: str, name: str, argument_types: tuple) -> None:
    """A caller's reload_init (numba pickles it with the caller's cached code)."""
    _register(module, name, argument_types)


def by_pointer(dispatcher):
    """An intrinsic that calls the jitted `dispatcher` through a function pointer, with the
    arguments a direct call would take: see the module's doc."""
    module, name = dispatcher.py_func.__module__, dispatcher.py_func.__name__

    @intrinsic
    def call(typingctx, *args):
        given = tuple(args)
        argument_types = tuple(types.unliteral(t) for t in given)
        symbol, return_type = _register(module, name, argument_types)
        reload = functools.partial(_reload, module, name, argument_types)

        def codegen(context, builder, signature, llargs):
            context.active_code_library._reload_init.add(reload)
            values = [context.cast(builder, builder.extract_value(llargs[0], i), t, declared)
                      for i, (t, declared) in enumerate(zip(given, argument_types))]
            function_type = context.call_conv.get_function_type(return_type, argument_types)
            callee = cgutils.get_or_insert_function(builder.module, function_type, symbol)
            status, result = context.call_conv.call_function(builder, callee, return_type, argument_types, values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result

        return return_type(types.StarArgTuple.from_types(given)), codegen

    return call
