"""Public entry points: convert, converted_call, to_code, to_graph, do_not_convert.

The lead's `Function` calls `convert(python_function)` once, then calls the
result while tracing; every call inside converted code goes through
`converted_call`, which converts user functions on first use (cached by code
object) and leaves library code alone.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from typing import Any, Callable, Optional

from torch_autograph import errors
from torch_autograph.autograph import conversion, experimental, operators
from torch_autograph.autograph.operators import dispatch, py_builtins
from torch_autograph.autograph.pyct import loader

# Module names (first component) whose functions are never converted: decided
# by name so that nothing has to be imported.
_NEVER_CONVERT = frozenset({"torch", "numpy", "torch_autograph", "functorch", "builtins",
                            "gast", "pytest", "_pytest", "hypothesis", "scipy", "pandas",
                            "matplotlib", "PIL"}) | frozenset(sys.stdlib_module_names)
_NEVER_CONVERT_NAMES = frozenset({"__next__", "__iter__", "__enter__", "__exit__",
                                  "__aenter__", "__aexit__", "__init__", "__new__"})
_GENERATOR_FLAGS = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
                    | inspect.CO_ITERABLE_COROUTINE)
_DO_NOT_CONVERT = "__autograph_do_not_convert__"


def _make_ag_module() -> types.ModuleType:
    """The one namespace generated code sees, as `ag__`."""
    ag = types.ModuleType("ag__", "The AutoGraph runtime as seen by generated code.")
    for name in operators.__all__:
        setattr(ag, name, getattr(operators, name))
    ag.converted_call = converted_call
    ag.set_loop_options = experimental.set_loop_options
    return ag


class ConversionCache:
    """Converted templates by code object, and converted functions by function object.

    A template (the expensive part) is shared by every function object with
    the same code, for as long as the program runs (one per function in the
    source). A converted function is the template bound to one function's
    closure and globals; it is kept on that function object, so it lives as
    long as that function (dropping a closure frees what it captured), and validated by
    identity of code, closure, globals and defaults, which may be reassigned.
    """

    def __init__(self) -> None:
        self.templates: dict[types.CodeType, Any] = {}
        # A function's converted version is kept on the function itself (`_CONVERTED`): the converted
        # function's `__wrapped__` is the original, so a table keyed weakly on the original would keep it
        # alive; the two refer to each other and die together. `clear` makes every such entry stale.
        self.generation = 0

    def clear(self) -> None:
        self.templates.clear()
        self.generation += 1


_CONVERTED = "__ta_converted__"


_cache = ConversionCache()


def _is_library(fn: types.FunctionType) -> bool:
    # The module that defined the code, not `__module__`: `functools.wraps` copies
    # that from the wrapped function onto a library's wrapper.
    module = fn.__globals__.get("__name__") or getattr(fn, "__module__", None) or ""
    return module.partition(".")[0] in _NEVER_CONVERT


def _convertible(fn: types.FunctionType) -> bool:
    code = fn.__code__
    return not (getattr(fn, _DO_NOT_CONVERT, False) or _is_library(fn)
                or code.co_flags & _GENERATOR_FLAGS
                or code.co_name in _NEVER_CONVERT_NAMES
                or code.co_filename.startswith("<autograph "))


def _warn_unconverted(fn: Callable, cause: BaseException) -> None:
    warnings.warn(
        f"AutoGraph could not transform {fn!r} and will run it as-is.\n"
        f"Cause: {cause}\n"
        "To silence this warning, decorate the function with "
        "@ta.autograph.experimental.do_not_convert", stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn` called one frame below here that points at the user's frame:
    the first frame neither of a library AutoGraph never converts (torch, torch_autograph...) nor generated."""
    f, level = sys._getframe(2), 2
    while f is not None:
        module = f.f_globals.get("__name__", "") or ""
        if module.partition(".")[0] not in _NEVER_CONVERT and not f.f_code.co_filename.startswith("<"):
            return level
        f, level = f.f_back, level + 1
    return 2


def _template(fn: types.FunctionType, strict: bool) -> Optional[conversion.ConvertedEntity]:
    code = fn.__code__
    entry = _cache.templates.get(code)
    if entry is None:
        try:
            entry = conversion.convert_entity(fn, AG)
        except errors.ConversionError as e:
            entry = e
            if not strict:
                _warn_unconverted(fn, e)
        _cache.templates[code] = entry
    if isinstance(entry, errors.ConversionError):
        if strict:
            raise entry
        return None
    return entry


def _converted_function(fn: types.FunctionType, strict: bool = False) -> types.FunctionType:
    """The converted version of `fn`, or `fn` itself if it is not to be converted."""
    entry = fn.__dict__.get(_CONVERTED)
    if (entry is not None and entry[0] is fn.__code__ and entry[1] is fn.__closure__
            and entry[2] is fn.__globals__ and entry[3] is fn.__defaults__ and entry[5] == _cache.generation):
        return entry[4]
    converted = fn
    if _convertible(fn):
        template = _template(fn, strict)
        if template is not None:
            converted = loader.rebind(template.template, fn, {"ag__": AG})
    elif (getattr(fn, "__wrapped__", None) is not None and _is_library(fn)
          and not getattr(fn, _DO_NOT_CONVERT, False)):
        converted = _through_decorator(fn, strict)
    fn.__dict__[_CONVERTED] = (fn.__code__, fn.__closure__, fn.__globals__, fn.__defaults__, converted,
                               _cache.generation)
    return converted


def _through_decorator(wrapper: types.FunctionType, strict: bool) -> types.FunctionType:
    """A library decorator's wrapper (e.g. `@torch.no_grad()`) calling the converted user function.

    A `functools.wraps` wrapper names the function it wraps in `__wrapped__`
    and, in the usual closure-based decorator, holds it in a closure cell. The
    wrapper's own code (the decorator's context: no_grad, inference_mode, ...)
    is kept; a copy of it gets a cell holding the converted function instead.
    A wrapper that does not hold the function in its closure is left as it is.
    """
    wrapped = wrapper.__wrapped__
    inner = wrapped
    if type(wrapped) is types.FunctionType:
        inner = _converted_function(wrapped, strict)
    if inner is wrapped:
        return wrapper
    cells = wrapper.__closure__ or ()
    closure = tuple(types.CellType(inner) if _cell_holds(c, wrapped) else c for c in cells)
    if all(a is b for a, b in zip(closure, cells)):
        return wrapper
    new = types.FunctionType(wrapper.__code__, wrapper.__globals__, wrapper.__name__,
                             wrapper.__defaults__, closure)
    new.__kwdefaults__ = wrapper.__kwdefaults__
    new.__dict__.update(wrapper.__dict__)
    new.__qualname__, new.__module__, new.__doc__ = (wrapper.__qualname__, wrapper.__module__,
                                                      wrapper.__doc__)
    return new


def _cell_holds(cell: types.CellType, value: Any) -> bool:
    try:
        return cell.cell_contents is value
    except ValueError:  # an empty cell
        return False


def _override(f: Any, args: tuple, kwargs: Optional[dict]) -> Any:
    """What the registered staging backend makes of calling library callable `f` (NotImplemented: call it)."""
    call = getattr(dispatch.current_backend(), "call", None)  # optional: a backend may stage no calls
    return NotImplemented if call is None else call(f, args, kwargs or {})


_overload_of = py_builtins.BUILTIN_OVERLOADS.get


def converted_call(f: Callable, args: tuple, kwargs: Optional[dict] = None) -> Any:
    """Calls `f(*args, **kwargs)`, converting `f` first if it is user code.

    Builtins with staged overloads (len, range, ...) go to the overloads;
    functions and methods of user modules are converted (cached); library
    callables are first offered to the registered staging backend's `call`
    (which stages e.g. `optimizer.step()` and calls `nn.Module`s); library
    functions, builtins, classes, generators and objects marked with
    `__autograph_do_not_convert__` are called as they are.
    """
    overload = _overload_of(id(f))
    if overload is not None:
        return overload(*args, **kwargs) if kwargs else overload(*args)
    else:
        t = type(f)
        if t is types.FunctionType:
            converted = _converted_function(f)
            if converted is f:
                # Library code, which the backend may stage instead (e.g. an LR scheduler's wrapped `step`).
                result = _override(f, args, kwargs)
                if result is not NotImplemented:
                    return result
            f = converted
        elif t is types.MethodType:
            fn = f.__func__
            if type(fn) is types.FunctionType:
                converted = _converted_function(fn)
                if converted is not fn:
                    return converted(f.__self__, *args, **kwargs) if kwargs else converted(
                        f.__self__, *args)
            # A library method (e.g. an optimizer's `step`) that the backend may stage instead.
            result = _override(f, args, kwargs)
            if result is not NotImplemented:
                return result
        elif t is functools.partial:
            return converted_call(f.func, f.args + tuple(args), {**f.keywords, **(kwargs or {})})
        elif t is not type and not getattr(
                f, _DO_NOT_CONVERT, False):
            result = _override(f, args, kwargs)
            if result is not NotImplemented:
                return result
            call = getattr(t, "__call__", None)
            if type(call) is types.FunctionType:
                converted = _converted_function(call)
                if converted is not call:
                    return converted(f, *args, **kwargs) if kwargs else converted(f, *args)
    return f(*args, **kwargs) if kwargs else f(*args)


def _unwrap(f: Any) -> tuple[types.FunctionType, Any]:
    """(plain function, bound self or None) behind a function, method, callable or Function."""
    if hasattr(f, "python_function"):
        f = f.python_function
    if isinstance(f, (staticmethod, functools.partial)):
        return _unwrap(f.__func__ if isinstance(f, staticmethod) else f.func)
    if isinstance(f, types.MethodType):
        return f.__func__, f.__self__
    if isinstance(f, types.FunctionType):
        return f, None
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call, f
    raise TypeError(f"cannot convert {f!r}: expected a Python function, method or callable "
                    "object")


def convert(f: Callable, *, strict: bool = False) -> Callable:
    """Returns the converted form of `f` (function, bound method or callable object).

    Objects marked `__autograph_do_not_convert__` and library functions come
    back unchanged; a `functools.partial` comes back as a partial of the
    converted function, a staticmethod as its converted function, and a
    function behind a library decorator (`@torch.no_grad()`) as the
    decorator's wrapper around the converted function. With `strict=False`
    (what `ta.function` uses) a function that cannot be converted (no
    source, unsupported syntax) runs as-is after one warning; with
    `strict=True` that raises ConversionError.
    """
    if getattr(f, _DO_NOT_CONVERT, False):
        return f
    if isinstance(f, functools.partial):
        return functools.partial(convert(f.func, strict=strict), *f.args, **f.keywords)
    if isinstance(f, staticmethod):
        return convert(f.__func__, strict=strict)
    fn, self_ = _unwrap(f)
    converted = _converted_function(fn, strict)
    if converted is fn:
        return f
    return converted if self_ is None else types.MethodType(converted, self_)


def to_graph(f: Callable) -> Callable:
    """The converted Python function for `f`; callable with plain or graph values.

    Raises:
        ConversionError: when `f` cannot be converted.
    """
    fn, self_ = _unwrap(f)
    template = _template(fn, strict=True)
    converted = loader.rebind(template.template, fn, {"ag__": AG})
    return converted if self_ is None else types.MethodType(converted, self_)


def to_code(f: Callable, *, dual_path: bool = False) -> str:
    """The converted source of `f`: valid Python, with a provenance comment.

    By default the staged form: each `if`/`while`/`for` over possibly-tensor
    values as the `ag__` operator call the graph runs, once. With
    `dual_path=True`, the code that actually executes: each statement also
    keeps its plain-Python path, taken when the condition or iterable is a
    Python value (so unconverted code costs nothing extra).

    Accepts a function, a method, a callable object or anything with a
    `python_function` attribute (a `ta.function`).

    Raises:
        ConversionError: when `f` cannot be converted.
    """
    fn, _ = _unwrap(f)
    template = _template(fn, strict=True)
    return template.source if dual_path else conversion.staged_source(fn)


def do_not_convert(func: Optional[Callable] = None) -> Callable:
    """Decorator (or factory, `@do_not_convert()`) making `func` always run unconverted.

    Inside a traced function, tensor-dependent control flow in such a
    function raises OperatorNotAllowedInGraphError.
    """
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    setattr(wrapper, _DO_NOT_CONVERT, True)
    return wrapper


def clear_cache() -> None:
    """Forgets every conversion (tests; or after editing source in a live session)."""
    _cache.clear()


AG = _make_ag_module()
