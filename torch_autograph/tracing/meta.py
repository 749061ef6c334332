"""Output metadata of a recorded op, computed by torch's own kernels: meta tensors, or fake tensors with symbols.

`MetaEngine.infer(func, args, kwargs)` runs `func` on the examples of its
graph-value arguments and returns the metadata of what it returns:

- all sizes known (the common case): `func` runs on `device="meta"` tensors
  (no data, no memory), behind a memo keyed by dtype, shape, strides, device,
  requires_grad and the other arguments: a repeated op costs about a
  microsecond;
- a size or number known only when the graph runs (a `SymInt`), or an op whose
  output size depends on data (`nonzero`, `x[mask]`): `func` runs on fake
  tensors of the trace's `FakeTensorMode`, whose sizes are symbols; a size
  read from data becomes a fresh unbacked symbol (`u0`).

The real device is tracked beside the meta tensors (factories and `.to()` run
on meta, their `device=` noted); fake tensors carry theirs.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..graph import Value, ValueKind, autocast_state, iter_values, map_nest
from .symbols import SYMBOLIC, ScalarMeta, SymbolTable, constant_of

# ----- what an output is --------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorMeta:
    """One tensor output: an example (meta or fake tensor) with its shape and strides, the real device, and
    whether it requires grad."""

    example: torch.Tensor
    device: torch.device | None
    requires_grad: bool = False

    @property
    def dtype(self) -> torch.dtype:
        return self.example.dtype

    @property
    def shape(self) -> tuple:
        return tuple(self.example.shape)


@dataclass(frozen=True)
class ListMeta:
    """A graph list output: its elements' dtype, shape and device (None while unknown)."""

    dtype: torch.dtype | None
    shape: tuple | None
    device: torch.device | None


class DataDependentValue(Exception):
    """An op returned a Python value that depends on tensor data (e.g. torch.equal)."""


class NeedsValue(Exception):
    """An op branched on a size or number known only when the graph runs (torch's GuardOnDataDependentSymNode)."""


# ----- examples ------------------------------------------------------------------------------------
def meta_example(shape: tuple, dtype: torch.dtype, stride: tuple | None = None, requires_grad: bool = False
                 ) -> torch.Tensor:
    """A `device="meta"` tensor of this shape (contiguous unless `stride` says otherwise)."""
    with torch._C.DisableTorchFunction():  # made for tracing, never recorded by it
        if stride is None:
            t = torch.empty(shape, dtype=dtype, device="meta")
        else:
            t = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        return t.requires_grad_() if requires_grad and (dtype.is_floating_point or dtype.is_complex) else t


def like_example(v: Value) -> torch.Tensor:
    """An example of the same metadata as TENSOR value `v`'s (its own fake, or a new meta tensor)."""
    ex = v.example
    if _is_fake(ex):
        return ex
    return meta_example(tuple(ex.shape), ex.dtype, tuple(ex.stride()))


def _is_meta(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "meta" and not _is_fake(t)


def _is_fake(t: Any) -> bool:
    return type(t).__name__ == "FakeTensor"


# ----- the engine ------------------------------------------------------------------------------------
class MetaEngine:
    """Infers output metadata for one trace (and its sub-traces); the memo is shared by every trace."""

    def __init__(self, symbols: SymbolTable, default_device: torch.device) -> None:
        self.symbols = symbols
        self.default_device = default_device
        self._fakes: dict[int, tuple[Value, torch.Tensor]] = {}  # id(Value) -> (Value, its fake)
        # Symbolic metadata already inferred in this trace, keyed with the symbols' expressions: a chain of ops
        # on `[s0, 16]` runs each kind of op through FakeTensorMode once.
        self._sym_memo: dict[Any, Any] = {}

    def infer(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """The output structure of `func(*args, **kwargs)`: TensorMeta / ScalarMeta leaves, Python values.

        `args`/`kwargs` hold graph `Value`s where graph values go, and may hold symbolic numbers.

        Raises:
            DataDependentValue: the op returns a Python value computed from data.
            NeedsValue: the op needs the value of a size or number known only when the graph runs.
            Exception: whatever torch raises for invalid arguments (a user error).
        """
        if func in _DATA_FACTORIES:
            return self._infer_data_factory(func, args, kwargs)
        if _any_autocast():
            # Meta tensors have no autocast dispatch; fake tensors of the real device do (bfloat16 matmuls).
            values = list(iter_values((args, kwargs)))
            if any(v.kind is ValueKind.LIST for v in values):
                return self._infer_list_op(func, args, kwargs)
            device = _output_device(func, args, kwargs, values, self.default_device)
            return self._infer_symbolic(func, args, kwargs, device)
        try:  # the common case first: static shapes seen before (one walk over the arguments)
            hit = memo.get((func, _key_of(args), _key_of(kwargs), self.default_device, torch.is_grad_enabled()))
        except (_NotStatic, TypeError):
            hit = None
        if hit is not None:
            return _fresh(hit)
        values = list(iter_values((args, kwargs)))
        if any(v.kind is ValueKind.LIST for v in values):
            return self._infer_list_op(func, args, kwargs)
        symbolic = any(isinstance(x, SYMBOLIC) for x in _leaves((args, kwargs))) or any(
            v.kind is not ValueKind.TENSOR or not _is_meta(v.example) for v in values)
        device = _output_device(func, args, kwargs, values, self.default_device)
        if not symbolic:
            key = _memo_key(func, args, kwargs, self.default_device)
            if key is not None:
                hit = memo.get(key)
                if hit is not None:
                    return _fresh(hit)
            try:
                out = _run_on_meta(func, args, kwargs)
            except (NotImplementedError, RuntimeError) as e:
                if not _looks_data_dependent(e):
                    raise
            else:
                result = _metas(out, device, data_dependent=False)
                if key is not None:
                    memo.put(key, result)
                return result
        return self._infer_symbolic(func, args, kwargs, device)

    def _infer_symbolic(self, func: Callable, args: tuple, kwargs: dict, device: Any) -> Any:
        """Metadata from fake tensors, memoised within the trace."""
        key = _symbolic_key(func, args, kwargs, device)
        if key is not None:
            hit = self._sym_memo.get(key)
            if hit is not None:
                return hit
        env = self.symbols.env
        before = (env.num_deferred_runtime_asserts, len(env.guards), len(env.replacements))
        result = self._infer_fake(func, args, kwargs, device)
        if key is not None and before == (env.num_deferred_runtime_asserts, len(env.guards),
                                          len(env.replacements)) and _symbols_of(result) <= key[-1]:
            # Nothing assumed and no new symbol made: the same call gives the same metadata anywhere in the trace.
            self._sym_memo[key] = result
        return result

    def example(self, shape: tuple, dtype: torch.dtype, device: torch.device | None,
                requires_grad: bool = False, hints: tuple | None = None) -> torch.Tensor:
        """An example tensor of `shape`: a meta tensor if every dim is an int, else a fake tensor whose dims are
        the given SymInts, and a fresh size symbol for each None (hinted by `hints[d]` where that is an int:
        see `Symbols.input_symbol`)."""
        if all(type(d) is int for d in shape):
            return meta_example(tuple(shape), dtype, requires_grad=requires_grad)
        sizes = [d if d is not None else self.symbols.fresh_size() if hints is None or hints[i] is None
                 else self.symbols.hinted_size(hints[i]) for i, d in enumerate(shape)]
        with self.symbols.mode, torch._C.DisableTorchFunction():
            t = torch.empty(sizes, dtype=dtype, device=device if device is not None else "cpu")
            if requires_grad and (dtype.is_floating_point or dtype.is_complex):
                t.requires_grad_()
        return t

    def _infer_data_factory(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """`torch.tensor(data)` & co.: the shape and dtype come from the structure of `data` and the kinds of its
        elements, never from their values, so each graph value in `data` is replaced by a zero of its kind
        (a real zero-filled tensor of its dtype and shape, or a Python 0 / 0.0 / False for a number)."""
        def zero(x: Any) -> Any:
            if isinstance(x, Value):
                if x.kind is ValueKind.SCALAR:
                    return {torch.bool: False, torch.float64: 0.0}.get(x.dtype, 0)
                if x.kind is ValueKind.TENSOR and all(type(d) is int for d in x.shape):
                    return torch.zeros(x.shape, dtype=x.dtype)
                raise NeedsValue(f"a graph value of unknown size ({x.type_str()}) in the data of {_name(func)}")
            if isinstance(x, SYMBOLIC):
                return {torch.SymBool: False, torch.SymFloat: 0.0}.get(_kind(x), 0)
            return x

        values = list(iter_values((args, kwargs)))
        device = _output_device(func, args, kwargs, values, self.default_device)
        data = args[0] if args else kwargs.get("data")
        if isinstance(data, Value) and data.kind is ValueKind.LIST and data.dtype is not None and data.shape == ():
            # A graph list of numbers (0-d tensors): a vector as long as the list is when the graph runs.
            return TensorMeta(self.example((None,), kwargs.get("dtype") or data.dtype, device), device)
        if isinstance(data, Value) and data.kind is ValueKind.TENSOR and not all(type(d) is int for d in data.shape):
            # `torch.tensor(t)` of a tensor is a copy of it: its shape, symbolic dims included.
            return TensorMeta(self.example(tuple(data.shape), kwargs.get("dtype") or data.dtype, device), device)
        a, k = _strip_device(func, map_nest(zero, args), map_nest(zero, kwargs))
        with torch._C.DisableTorchFunction():
            out = func(*a, **{**k, "device": "meta"})
        return _metas(out, device, data_dependent=False)

    def _infer_list_op(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """`torch.stack(lst)` / `torch.cat(lst)` of a graph list, whose length is known only when the graph runs:
        the output has the elements' metadata with a fresh size symbol for the list's dim."""
        lst = args[0] if args else kwargs.get("tensors")
        if not (isinstance(lst, Value) and lst.kind is ValueKind.LIST) or func not in _LIST_OPS:
            raise NeedsValue(f"a graph list as an argument of {_name(func)}: stack it first (torch.stack(lst))")
        if lst.dtype is None:
            raise NeedsValue(f"a graph list whose elements are still unknown, as an argument of {_name(func)}")
        elem = list(lst.shape)
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        if _LIST_OPS[func] == "stack":
            dim = dim + len(elem) + 1 if dim < 0 else dim
            shape = elem[:dim] + [None] + elem[dim:]
        else:
            dim = dim + len(elem) if dim < 0 else dim
            shape = elem[:dim] + [None] + elem[dim + 1:]
        return TensorMeta(self.example(tuple(shape), lst.dtype, lst.device), lst.device)

    # ----- fake tensors --------------------------------------------------------------------------
    def fake_of(self, v: Value) -> torch.Tensor:
        """`v`'s example as a fake tensor of this trace's FakeTensorMode (made from its meta example once)."""
        if _is_fake(v.example):
            return v.example
        hit = self._fakes.get(id(v))
        if hit is not None:
            return hit[1]
        ex = v.example
        with self.symbols.mode, torch._C.DisableTorchFunction():
            fake = torch.empty_strided(tuple(ex.shape), tuple(ex.stride()), dtype=ex.dtype,
                                       device=v.device if v.device is not None else "cpu")
            if ex.requires_grad:
                fake.requires_grad_()
        self._fakes[id(v)] = (v, fake)
        return fake

    def _infer_fake(self, func: Callable, args: tuple, kwargs: dict, device: torch.device | None) -> Any:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        def leaf(x: Any) -> Any:
            if isinstance(x, Value):
                if x.kind is ValueKind.TENSOR:
                    return self.fake_of(x)
                if x.kind is ValueKind.SCALAR:
                    return x.example
                raise NeedsValue(f"a graph list ({x.type_str()}) as an argument of {_name(func)}")
            return x

        a, k = map_nest(leaf, args), map_nest(leaf, kwargs)
        if a:
            with self.symbols.mode:
                a = _in_place_safe(func, a)
        try:
            with self.symbols.mode, torch._C.DisableTorchFunction():
                try:
                    out = _call(func, a, k, fake=True)
                except RuntimeError as e:
                    device = _only_cuda_device(a, k)
                    if "not linked with support for cuda" not in str(e) or device is None:
                        raise
                    out = _on_cpu_instead(func, a, k, device)
        except GuardOnDataDependentSymNode as e:
            raise NeedsValue(str(e).split("\n")[0]) from None
        return _metas(out, None, data_dependent=True)

def _only_cuda_device(args: tuple, kwargs: dict) -> torch.device | None:
    """The device of the tensors among `args`, if they are all on one CUDA device."""
    devices: set = set()
    map_nest(lambda x: devices.add(x.device) if isinstance(x, torch.Tensor) else None, (args, kwargs))
    device = next(iter(devices)) if len(devices) == 1 else None
    return device if device is not None and device.type == "cuda" else None


def _on_cpu_instead(func: Callable, args: tuple, kwargs: dict, device: torch.device) -> Any:
    """Fake CUDA tensors on a build without CUDA: a few kernels (nonzero, masked indexing) check the device
    before their fake implementation runs. Their metadata is the same on the CPU; the outputs are moved
    back to the inputs' device."""
    def to_cpu(x: Any) -> Any:
        return x.to("cpu") if isinstance(x, torch.Tensor) else x

    out = _call(func, map_nest(to_cpu, args), map_nest(to_cpu, kwargs), fake=True)
    return map_nest(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, out)


_any_autocast = torch._C._is_any_autocast_enabled
_GETITEM = (operator.getitem, torch.Tensor.__getitem__)
_SETITEM = (operator.setitem, torch.Tensor.__setitem__)


_DATA_FACTORIES = frozenset({torch.tensor, torch.as_tensor, torch.asarray, torch.scalar_tensor})
_LIST_OPS = {torch.stack: "stack", torch.cat: "cat", torch.concat: "cat", torch.concatenate: "cat"}


def _kind(x: Any) -> type:
    return torch.SymBool if isinstance(x, torch.SymBool) else torch.SymFloat if isinstance(x, torch.SymFloat) \
        else torch.SymInt


def _call(func: Callable, args: tuple, kwargs: dict, fake: bool) -> Any:
    """`func(*args, **kwargs)` on examples; indexing with symbolic numbers goes through `indexing.getitem_meta`."""
    if fake and (func in _GETITEM or func in _SETITEM) and isinstance(args[0], torch.Tensor):
        from .indexing import getitem_meta

        view = getitem_meta(args[0], args[1])
        if func in _SETITEM:
            torch.broadcast_shapes(view.shape, getattr(args[2], "shape", ()))  # the value must fit where it goes
            return None
        return view
    return func(*args, **kwargs)


def _in_place_safe(func: Callable, args: tuple) -> tuple:
    """Examples are leaves; a graph value written in place (`out += h` after a module that requires grad) is
    not: give an in-place op a non-leaf copy of its first argument, as the value is when the graph runs."""
    name = getattr(func, "__name__", "")
    if args and name.endswith("_") and not name.endswith("__") or name.startswith("__i"):
        first = args[0]
        if isinstance(first, torch.Tensor) and first.requires_grad and first.is_leaf:
            with torch._C.DisableTorchFunction(), torch.enable_grad():
                return (first.clone(), *args[1:])
    return args


def _run_on_meta(func: Callable, args: tuple, kwargs: dict) -> Any:
    a = map_nest(lambda x: x.example if isinstance(x, Value) else x, args)
    k = map_nest(lambda x: x.example if isinstance(x, Value) else x, kwargs)
    a = _in_place_safe(func, a)
    a, k = _strip_device(func, a, k)
    with torch._C.DisableTorchFunction():
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            return a[0].clone()
        if "device" not in k and not any(isinstance(v, Value) and v.kind is ValueKind.TENSOR
                                         for v in iter_values((args, kwargs))):
            # A factory (torch.zeros(n), torch.randn(3)): on the default device it would allocate real memory
            # and draw from the global generator while tracing, shifting every later random number.
            try:
                return _call(func, a, {**k, "device": "meta"}, fake=False)
            except TypeError:
                pass  # no `device` argument: not a factory
        return _call(func, a, k, fake=False)


def _strip_device(func: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Keep factories and `.to(...)` on meta: the real device is tracked separately."""
    if "device" in kwargs:
        kwargs = {**kwargs, "device": "meta"}
    if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], (str, torch.device)):
        args = (args[0], "meta") + tuple(args[2:])
    if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], torch.Tensor):
        args = (args[0], args[1].dtype) + tuple(args[2:])  # .to(other): other's dtype; its device is tracked
    if func in (torch.Tensor.cuda, torch.Tensor.cpu):
        return (args[0],), {}
    return args, kwargs


def _looks_data_dependent(err: Exception) -> bool:
    text = str(err)
    return isinstance(err, NotImplementedError) or any(
        s in text for s in ("meta", "data-dependent", "Meta", "item()", "cannot be called on", "data dependent"))


def _metas(out: Any, device: torch.device | None, data_dependent: bool) -> Any:
    """Metadata of what `func` returned: tensors as TensorMeta, symbolic numbers as ScalarMeta."""
    if isinstance(out, torch.Tensor):
        dev = out.device if _is_fake(out) else device
        return TensorMeta(out, dev, bool(out.requires_grad))
    if isinstance(out, torch.Size):
        return tuple(constant_of(d) for d in out)
    if isinstance(out, (tuple, list)):
        items = [_metas(o, device, data_dependent) for o in out]
        if hasattr(out, "_fields") or type(out).__module__ == "torch.return_types":
            return type(out)(items)
        return type(out)(items)
    if isinstance(out, SYMBOLIC):
        c = constant_of(out)
        if not isinstance(c, SYMBOLIC):
            return c
        return ScalarMeta({torch.SymBool: torch.bool, torch.SymFloat: torch.float64}.get(type(out), torch.int64), out)
    if isinstance(out, (bool, int, float)) and data_dependent:
        raise DataDependentValue(out)
    return out


def _fresh(hit: Any) -> Any:
    """A memo hit with new example tensors (a trace may later mark an example requires_grad or keep it)."""
    if isinstance(hit, TensorMeta):
        ex = hit.example
        fresh = meta_example(tuple(ex.shape), ex.dtype, tuple(ex.stride()), ex.requires_grad)
        if fresh.requires_grad and not ex.is_leaf:
            # An op's result is no leaf: an in-place write on it (`x[0] = 1` after a Linear) is allowed where a
            # leaf's is refused. A leaf example would make a trace's outcome depend on whether the op was seen
            # before in the process.
            with torch._C.DisableTorchFunction():
                result = fresh.clone()  # the same strides for every dense layout
            fresh = result if result.stride() == fresh.stride() else fresh
        return TensorMeta(fresh, hit.device, hit.requires_grad)
    if isinstance(hit, tuple) and not isinstance(hit, torch.Size):
        items = [_fresh(h) for h in hit]
        return type(hit)(*items) if hasattr(hit, "_fields") else type(hit)(items)
    if isinstance(hit, list):
        return [_fresh(h) for h in hit]
    return hit


def _name(func: Any) -> str:
    return getattr(func, "__name__", None) or str(func)


def _leaves(obj: Any) -> Any:
    from ..graph import iter_leaves

    return iter_leaves(obj)


# ----- the memo ------------------------------------------------------------------------------------
class _Memo:
    """Metadata of ops run on meta tensors, by what determines it; keeps the `max_entries` newest."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._entries: OrderedDict[Any, Any] = OrderedDict()
        self.max_entries = max_entries
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


memo = _Memo()


class _NotStatic(Exception):
    """An argument with symbolic sizes, a run-time number or a graph list: not for the static memo."""


def _memo_key(func: Callable, args: tuple, kwargs: dict, default_device: Any) -> Any:
    """The static memo's key: the arguments' metadata, and the default device (where factories allocate)."""
    try:
        key = (func, _key_of(args), _key_of(kwargs), default_device, torch.is_grad_enabled())
        hash(key)
        return key
    except (TypeError, _NotStatic):
        return None


def _key_of(obj: Any) -> Any:
    if isinstance(obj, Value):
        ex = obj.example
        if obj.kind is not ValueKind.TENSOR or not _is_meta(ex):
            raise _NotStatic
        # Leaf or not decides whether an in-place op may run on it (autograd): part of the key.
        return (obj.kind, ex.dtype, tuple(ex.shape), tuple(ex.stride()), obj.device, ex.requires_grad,
                ex.grad_fn is None)
    if isinstance(obj, SYMBOLIC):
        raise _NotStatic
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_key_of(x) for x in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _key_of(v)) for k, v in obj.items()))
    if isinstance(obj, slice):
        return (slice, _key_of(obj.start), _key_of(obj.stop), _key_of(obj.step))
    if isinstance(obj, float) and obj != obj:
        return (float, "nan")
    if isinstance(obj, torch.Tensor):
        raise TypeError("a real tensor argument: not keyed")
    return (type(obj), obj)


def _symbolic_key(func: Callable, args: tuple, kwargs: dict, device: Any) -> Any:
    """A memo key for a call on values with symbolic sizes (None when it may write or is not keyable); its
    last item is the set of symbols in the arguments."""
    name = getattr(func, "__name__", "")
    if name.endswith("_") and not name.endswith("__") or "out" in kwargs or func in _SETITEM:
        return None
    symbols: set = set()
    try:
        key = (func, _sym_key_of(args, symbols), _sym_key_of(kwargs, symbols), device, torch.is_grad_enabled(),
               autocast_state())
        hash(key)
    except TypeError:
        return None
    return key + (frozenset(symbols),)


def _sym_key_of(obj: Any, symbols: set) -> Any:
    if isinstance(obj, Value):
        ex = obj.example
        if obj.kind is ValueKind.SCALAR:
            return (obj.kind, obj.dtype, _dim_key(ex, symbols) if isinstance(ex, SYMBOLIC) else id(obj))
        if not isinstance(ex, torch.Tensor):
            raise TypeError("no example")
        return (obj.kind, ex.dtype, tuple(_dim_key(d, symbols) for d in ex.shape),
                tuple(_dim_key(d, symbols) for d in ex.stride()), obj.device, ex.requires_grad)
    if isinstance(obj, SYMBOLIC):
        return (type(obj), _dim_key(obj, symbols))
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_sym_key_of(x, symbols) for x in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _sym_key_of(v, symbols)) for k, v in obj.items()))
    if isinstance(obj, slice):
        return (slice, _sym_key_of(obj.start, symbols), _sym_key_of(obj.stop, symbols), _sym_key_of(obj.step, symbols))
    if isinstance(obj, float) and obj != obj:
        return (float, "nan")
    if isinstance(obj, torch.Tensor):
        raise TypeError("a real tensor argument: not keyed")
    return (type(obj), obj)


def _dim_key(d: Any, symbols: set) -> Any:
    if isinstance(d, SYMBOLIC):
        expr = d.node.expr
        symbols.update(expr.free_symbols)
        return ("sym", expr)
    return d


def _symbols_of(result: Any) -> set:
    """The size symbols in inferred metadata (its tensors' sizes and strides, its numbers)."""
    found: set = set()

    def visit(m: Any) -> None:
        if isinstance(m, TensorMeta):
            for d in (*m.example.shape, *m.example.stride()):
                if isinstance(d, SYMBOLIC):
                    found.update(d.node.expr.free_symbols)
        elif isinstance(m, ScalarMeta):
            if isinstance(m.example, SYMBOLIC):
                found.update(m.example.node.expr.free_symbols)
        elif isinstance(m, (tuple, list)):
            for x in m:
                visit(x)

    visit(result)
    return found


# ----- devices ---------------------------------------------------------------------------------------
_DEVICE_METHODS = {torch.Tensor.cuda: "cuda", torch.Tensor.cpu: "cpu"}


def _output_device(func: Callable, args: tuple, kwargs: dict, values: list[Value],
                   default: torch.device | None) -> torch.device | None:
    if func in _DEVICE_METHODS:
        return torch.device(_DEVICE_METHODS[func])
    dev = kwargs.get("device")
    if dev is None and func is torch.Tensor.to:
        for a in args[1:]:
            if isinstance(a, (str, torch.device)):
                dev = a
            elif isinstance(a, Value) and a.kind is ValueKind.TENSOR:
                dev = a.device
    if dev is not None and not isinstance(dev, Value):
        return torch.device(dev)
    for v in values:
        if v.kind is ValueKind.TENSOR and v.device is not None:
            return v.device
    return default
