"""The conversion pipeline: parse a function, run the converters, load the result.

    convert_entity(fn) -> ConvertedEntity(template, source, filename)

`template` is the converted function compiled inside a factory whose
parameters are `ag__` and the original's free variables; `api.py` rebinds it
to each original function's closure and globals (see `loader.rebind`).
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import types
from typing import Any, Callable

import gast

from torch_autograph.autograph.converters import (
    asserts,
    break_statements,
    call_trees,
    conditional_expressions,
    continue_statements,
    control_flow,
    directives,
    functions,
    lists,
    logical_expressions,
    named_expressions,
    return_statements,
    slices,
    variables,
)
from torch_autograph.autograph.pyct import (
    loader,
    naming,
    origin_info,
    parser,
    reaching_definitions,
    transformer,
)

# Scope-level rewrites run per function (nested defs first), expression-level
# rewrites once over the whole tree. Order matters: jumps are lowered before
# control flow; logical/ternary rewrites run last so control_flow sees plain
# Python expressions.
# Each converter is skipped when the node types it rewrites do not occur.
_PER_SCOPE_EARLY = ((break_statements, (gast.Break, gast.For, gast.While)),
                    (continue_statements, (gast.Continue,)),
                    (return_statements, (gast.Return,)),
                    (named_expressions, (gast.NamedExpr,)))
_WHOLE_TREE = ((asserts, (gast.Assert,)), (lists, (gast.Attribute, gast.AugAssign, gast.Delete)),
               (slices, (gast.Subscript,)), (call_trees, (gast.Call,)))
_WHOLE_TREE_LATE = ((conditional_expressions, (gast.IfExp,)),
                    (logical_expressions, (gast.BoolOp, gast.UnaryOp, gast.Compare)))


@dataclasses.dataclass(frozen=True)
class ConvertedEntity:
    """The result of converting one code object.

    Attributes:
        template: the converted function with placeholder closure/globals.
        source: the text `to_code` returns (provenance comment + def).
        filename: the generated module's pseudo-filename (in linecache).
    """

    template: types.FunctionType
    source: str
    filename: str


def _display_path(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def _namespace_of(fn: types.FunctionType) -> Callable[[str], Any]:
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    builtins_ = fn.__globals__.get("__builtins__", {})
    if isinstance(builtins_, types.ModuleType):
        builtins_ = vars(builtins_)

    def resolve(name: str) -> Any:
        if name in cells:
            try:
                return cells[name].cell_contents
            except ValueError:
                return transformer.MISSING
        if name in fn.__globals__:
            return fn.__globals__[name]
        return builtins_.get(name, transformer.MISSING)

    return resolve


def transform_function(node: gast.AST, ctx: transformer.ConversionContext) -> gast.FunctionDef:
    """Runs every converter over the parsed function; returns the converted FunctionDef."""
    node = functions.transform(node, ctx)
    kinds = {type(n) for n in transformer.walk(node)}
    # The user's nested defs, innermost first, then the function itself: the
    # scopes of the per-scope converters (none of which adds user scopes).
    scopes = transformer.nested_functions(node) + [node]
    if gast.While in kinds or gast.For in kinds:
        directives.transform(node, ctx)
    tests_and_or = gast.BoolOp in kinds
    if tests_and_or:
        logical_expressions.mark_tests(node)
    for conv, triggers in _PER_SCOPE_EARLY:
        if not kinds.isdisjoint(triggers):
            for scope in scopes:
                conv.transform(scope, ctx)
    if tests_and_or or not kinds.isdisjoint((gast.Break, gast.Return)):
        logical_expressions.mark_tests(node)  # and the tests lowered jumps made
    for conv, triggers in _WHOLE_TREE:
        if not kinds.isdisjoint(triggers):
            conv.transform(node, ctx)

    def late(scope: gast.FunctionDef) -> None:
        # Reaching definitions are shared by variables and control_flow.
        if reaching_definitions.analyze(scope) or gast.Delete in kinds:
            variables.transform(scope, ctx)
        control_flow.transform(scope, ctx)

    for scope in scopes:
        late(scope)
    # Lowered jumps add `not flag` / `not flag and test` expressions.
    kinds |= {gast.UnaryOp} if not kinds.isdisjoint(
        (gast.Break, gast.Continue, gast.Return)) else set()
    for conv, triggers in _WHOLE_TREE_LATE:
        if not kinds.isdisjoint(triggers):
            conv.transform(node, ctx)
    return node


def _reads_name(node: gast.AST, code: types.CodeType, name: str) -> bool:
    """Whether the converted `node` of `code` reads `name`; the code objects' names rule most functions out."""
    return _code_names_it(code, name) and any(type(n) is gast.Name and n.id == name and type(n.ctx) is gast.Load
                                              for n in transformer.walk(node))


def _code_names_it(code: types.CodeType, name: str) -> bool:
    return name in code.co_names or any(
        _code_names_it(c, name) for c in code.co_consts if isinstance(c, types.CodeType))


def _converted_tree(fn: types.FunctionType, dual_path: bool) -> tuple[Any, Any, transformer.ConversionContext]:
    """(parsed entity, converted FunctionDef, conversion context) of `fn`."""
    parsed = parser.parse_entity(fn)
    code = fn.__code__
    namer = naming.Namer.for_tree(parsed.node)
    for reserved in ("ag__",) + code.co_freevars:
        namer.reserve(reserved)
    name = code.co_name if code.co_name.isidentifier() else namer.new_symbol("lambda_")
    ctx = transformer.ConversionContext(namer, parsed.filename, name, _namespace_of(fn), dual_path=dual_path)
    return parsed, transform_function(parsed.node, ctx), ctx


def _provenance(fn: types.FunctionType, parsed: Any) -> str:
    return f"# converted from {fn.__name__} ({_display_path(parsed.filename)}:{parsed.node.lineno})"


def staged_source(fn: types.FunctionType) -> str:
    """The converted source of `fn` in its staged form only: every `if`/`while`/`for` as its operator call.

    It is what the graph runs (operators also take plain Python values, so it is valid, equivalent
    code), without the plain-Python path that the executed conversion keeps next to each statement.

    Raises:
        parser.SourceNotFoundError, errors.ConversionError.
    """
    parsed, node, _ = _converted_tree(fn, dual_path=False)
    text, _ = loader.unparse_with_origins(node)
    return _provenance(fn, parsed) + "\n" + text + "\n"


def convert_entity(fn: types.FunctionType, ag_module: Any) -> ConvertedEntity:
    """Converts `fn` (a plain function or lambda).

    Raises:
        parser.SourceNotFoundError, errors.ConversionError.
    """
    parsed, node, ctx = _converted_tree(fn, dual_path=True)
    code = fn.__code__
    name = ctx.function_name
    factory_name = ctx.namer.new_symbol("create_converted_entity")
    params = ", ".join(["ag__", *code.co_freevars])
    function_text, owners = loader.unparse_with_origins(node)
    provenance = _provenance(fn, parsed)
    # The function's text indented into a factory whose parameters are its free
    # variables (only docstring bodies could differ, and __doc__ is restored).
    header = [provenance, f"def {factory_name}({params}):"]
    if node.name not in code.co_freevars and _reads_name(node, code, node.name):
        # A recursive call names the function as a global; the factory's own `def`
        # must not turn that name into a closure variable of the factory.
        header.append(f"    global {node.name}")
    source = "\n".join(header + [textwrap.indent(function_text, "    "),
                                 f"    return {node.name}", ""])
    filename = loader.generated_filename(
        name, f"{parsed.filename}:{code.co_firstlineno}:{code.co_name}:{source}")
    # Generated line = function text line + len(header); the factory's lines stand for the def.
    owners = {line + len(header): user_line for line, user_line in owners.items()}
    for line in range(2, len(header) + 1):
        owners[line] = node.lineno
    owners[source.count("\n")] = node.lineno
    origin_info.register(filename, origin_info.build_line_map(owners, parsed.filename,
                                                              fn.__name__))
    namespace = loader.load_source(source, filename)
    template = namespace[factory_name](ag_module, *([None] * len(code.co_freevars)))
    to_code = provenance + "\n" + function_text + "\n"
    return ConvertedEntity(template, to_code, filename)
