"""The command line: `python -m torch_autograph` (or `torch-autograph`) `code`, `graph`, `explain`.

    torch-autograph code model.py:step                      # what AutoGraph makes of step (staged form)
    torch-autograph graph model.py:step --signature "float32[None, 3], int64[]"
    torch-autograph graph model.py:step --signature "float32[8, 3]" --svg step.svg
    torch-autograph explain train.py:step -- --epochs 2     # run the script; every trace of step and why

`FILE.py:NAME` names a function, a `ta.function`, a callable object or a method defined at the top level
of FILE: `model.forward` for an instance FILE defines, `Model.forward` for one made as `Model()`. `code` and `graph` import FILE without running its
`if __name__ == "__main__":` block; `explain` runs FILE as a script (with the arguments after `--`).
A signature lists one entry per argument: a tensor as `dtype[dims]` (a dim is a number or None, e.g.
`float32[None, 3]`, `int64[]` for a scalar tensor, an optional `@cuda` device) or a Python literal
(`2`, `True`, `'mean'`).

Errors (of the command line, of the file, of tracing it) print as one paragraph with the user's line and
exit with status 2; `--traceback` shows the whole traceback.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import os
import re
import runpy
import sys
import traceback
from typing import Any, Callable, Sequence

import torch

from .autograph import to_code
from .function import BoundFunction, Function, function, map_origin
from .graph import TensorSpec
from .tracing import is_library_file

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*(?:@\s*([A-Za-z0-9:_]+))?\s*$")


class CommandError(Exception):
    """A problem with what the command line asked for; printed without a traceback."""


# How many lines of an error's message the one paragraph shows.
_ERROR_LINES = 10


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 2 an error of the user's: usage, file, trace)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except CommandError as e:
        print(f"torch-autograph {args.command}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the user's file or its trace failed: the library's message, at the user's line
        if args.traceback:
            traceback.print_exc()
        else:
            print(_one_paragraph(args.command, e), file=sys.stderr)
        return 2


def _one_paragraph(command: str, e: BaseException) -> str:
    """`e` as a few lines without a traceback: its type and message, and the user's innermost line."""
    lines = [line for line in str(e).splitlines() if line.strip()] or [""]
    if len(lines) > _ERROR_LINES:
        lines = lines[:_ERROR_LINES] + ["  ..."]
    where = _user_line(e)
    if where and where not in str(e):
        lines.append(f"  at {where}")
    lines.append("  (--traceback shows the whole traceback)")
    return f"torch-autograph {command}: error: {type(e).__name__}: " + "\n".join(lines)


def _user_line(e: BaseException) -> str | None:
    """The innermost line of user code `e` went through (generated code mapped back), as FILE:LINE."""
    found = None
    for f in traceback.extract_tb(e.__traceback__):
        loc = map_origin(f.filename, f.lineno)
        if loc is not None:
            found = f"{loc.filename}:{loc.lineno}"
        elif not is_library_file(f.filename) and f.filename != __file__:
            found = f"{f.filename}:{f.lineno}"
    return found


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torch-autograph", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", help="on an error, print the whole traceback")
    sub = p.add_subparsers(dest="command", required=True)
    code = sub.add_parser("code", help="the converted source of a function", parents=[common])
    code.add_argument("target", help="FILE.py:NAME")
    code.add_argument("--dual-path", action="store_true",
                      help="the code that executes: each statement also keeps its plain-Python path")
    code.set_defaults(run=_code)
    graph = sub.add_parser("graph", help="the graph a function traces to, for a signature",
                           parents=[common])
    graph.add_argument("target", help="FILE.py:NAME")
    graph.add_argument("--signature", help='e.g. "float32[None, 3], int64[]" (default: the input_signature)')
    out = graph.add_mutually_exclusive_group()
    out.add_argument("--dot", action="store_true", help="print DOT text (Graphviz) instead of the graph text")
    out.add_argument("--svg", metavar="PATH", help="draw the graph to PATH with Graphviz's dot")
    out.add_argument("--python", action="store_true", help="print the Python the graph runs as")
    graph.set_defaults(run=_graph)
    explain = sub.add_parser("explain", help="run a script, then list every trace of a function and why",
                             parents=[common])
    explain.add_argument("target", help="FILE.py:NAME (a ta.function the script calls)")
    explain.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script, after --")
    explain.set_defaults(run=_explain)
    return p


def _code(args: argparse.Namespace) -> int:
    print(to_code(_load(args.target), dual_path=args.dual_path), end="")
    return 0


def _graph(args: argparse.Namespace) -> int:
    target = _load(args.target)
    f = target if isinstance(target, (Function, BoundFunction)) else function(target)
    if args.signature is not None:
        cf = f.get_concrete_function(*parse_signature(args.signature))
    elif f.input_signature is not None:
        cf = f.get_concrete_function()
    else:
        raise CommandError(f"{args.target} has no input_signature: give one with --signature, "
                           f"e.g. --signature \"float32[None, 3], int64[]\"")
    if args.svg:
        print(cf.graph.render(args.svg))
    elif args.dot:
        print(cf.graph.to_dot(), end="")
    elif args.python:
        print(cf.graph.python_source, end="")
    else:
        print(cf.graph)
    return 0


def _explain(args: argparse.Namespace) -> int:
    path, name = _split(args.target)
    script_args = list(args.script_args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        namespace = runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    target = _lookup(namespace, name, args.target)
    if not isinstance(target, (Function, BoundFunction)):
        raise CommandError(f"{args.target} is not a ta.function ({type(target).__name__}): explain lists the "
                           f"traces of a function decorated with @ta.function")
    history = target.trace_history()
    calls = target._monitor.calls  # noqa: SLF001 - the calls counted for the retrace warning
    print(f"{target.name}: {target.experimental_get_tracing_count()} trace(s) in {calls} call(s)")
    for event in history:
        print(f"  {event}")
    if not history:
        print("  (never traced: the script did not call it)")
    for cf in target.concrete_functions:  # with jit_compile: what became of each region, and why
        if cf.jit_status != "off":
            print("\n".join("  " + line for line in cf.jit_report().splitlines()))
    return 0


def parse_signature(text: str) -> list[Any]:
    """`"float32[None, 3], int64[], 2"` -> [TensorSpec([None, 3], float32), TensorSpec([], int64), 2]."""
    entries: list[Any] = []
    for item in _top_level_split(text):
        m = _SPEC.match(item)
        if m:
            entries.append(_tensor_spec(m.group(1), m.group(2), m.group(3), item))
            continue
        try:
            entries.append(ast.literal_eval(item.strip()))
        except (ValueError, SyntaxError):
            raise CommandError(f"cannot read {item.strip()!r} in the signature: write a tensor as dtype[dims] "
                               f"(float32[None, 3], int64[]) or a Python literal (2, True, 'mean')") from None
    return entries


def _tensor_spec(dtype_name: str, dims: str, device: str | None, item: str) -> TensorSpec:
    dtype = getattr(torch, dtype_name, None)
    if not isinstance(dtype, torch.dtype):
        raise CommandError(f"{dtype_name!r} in {item.strip()!r} is not a torch dtype (float32, int64, bool, ...)")
    shape = []
    for d in filter(None, (d.strip() for d in dims.split(","))):
        if d in ("None", "?"):
            shape.append(None)
        elif d.isdigit():
            shape.append(int(d))
        else:
            raise CommandError(f"the dim {d!r} in {item.strip()!r} is neither a number nor None")
    return TensorSpec(shape, dtype, device=device)


def _top_level_split(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current)
    return [i for i in items if i.strip()]


def _split(target: str) -> tuple[str, str]:
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise CommandError(f"expected FILE.py:NAME, got {target!r}")
    if not os.path.isfile(path):
        raise CommandError(f"no such file: {path}")
    return path, name


def _load(target: str) -> Callable[..., Any]:
    """The object FILE.py:NAME names, FILE imported as a module (its `__main__` block does not run)."""
    path, name = _split(target)
    module_name = "_ta_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # inspect.getsource looks the module up to find the source
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return _lookup(vars(module), name, target)


def _lookup(namespace: dict[str, Any], name: str, target: str) -> Any:
    head, *rest = name.split(".")
    if head not in namespace:
        found = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_"))
        raise CommandError(f"{target}: the file defines no {head!r} at its top level"
                           + (f" (it has: {', '.join(found[:12])})" if found else ""))
    obj = namespace[head]
    if inspect.isclass(obj) and rest and not isinstance(inspect.getattr_static(obj, rest[0], None),
                                                        (staticmethod, classmethod, type)):
        obj = _default_instance(obj, head, rest, target)
    for part in rest:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CommandError(f"{target}: {type(obj).__name__} {head!r} has no attribute {part!r}") from None
    if not callable(obj):
        raise CommandError(f"{target} is a {type(obj).__name__}, not a function")
    return obj


def _default_instance(cls: type, head: str, rest: list[str], target: str) -> Any:
    """`Model.forward` is a method: it is traced on `Model()`, or the message says how to name an instance."""
    path = target.rpartition(":")[0]
    how = (f"define one at the top level of {path} (e.g. `model = {head}(...)`) and name it: "
           f"{path}:model.{'.'.join(rest)}")
    try:
        inspect.signature(cls).bind()
    except TypeError as e:
        raise CommandError(f"{target} is a method: it needs an instance of {head}, and {head}() cannot make one "
                           f"({e}); {how}") from None
    except ValueError:
        pass  # no signature to check (a builtin base): try the call
    try:
        instance = cls()
    except Exception as e:
        raise CommandError(f"{target} is a method: it needs an instance of {head}, and {head}() failed "
                           f"({type(e).__name__}: {e}); {how}") from None
    print(f"torch-autograph: {target} traced on {head}(), a default-constructed instance", file=sys.stderr)
    return instance
