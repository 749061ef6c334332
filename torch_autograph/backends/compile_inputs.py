"""What an inductor compile of a graph (or region) is specialised on, and the example inputs it traces with.

Inductor compiles from example inputs. `Layouts` makes them fake tensors of a
`FakeTensorMode` with a `ShapeEnv`, passed inside a `TracingContext` (which is
also what lets inductor's FX graph cache serve a compile from disk: without a
shape environment it bypasses the cache). Two kinds of variant:

- exact: every size as in the call (strides too); inductor's code asserts them.
- open: the dims the graph itself leaves symbolic (`Value.shape` holds a
  `SymInt`: a loop variable that grows, an input traced with a `None` dim) are
  size symbols of the compile, so one compiled variant serves every length.
  A greedy decoder whose sequence grows by a token per step compiles each
  region once, not once per length. What the compile assumed about those
  symbols (a length of at least 2, any decision inductor made on them) comes
  back as a guard expression, checked at every call of the variant
  (`open_guard`); a call that fails it takes an exact variant instead, so a
  compiled variant never runs on sizes its code did not allow for.

Sizes 0 and 1 never take an open variant (torch specialises symbols on them),
nor do tensors that are not contiguous (their strides would need symbols of
their own).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import torch

from ..graph import Graph, ValueKind


class Layouts:
    """The open dims of a graph's inputs, and the keys and example inputs of its compiled variants."""

    def __init__(self, graph: Graph) -> None:
        self.open: tuple[frozenset[int], ...] = tuple(
            frozenset(d for d, s in enumerate(v.shape) if type(s) is not int)
            if v.kind is ValueKind.TENSOR and v.shape is not None else frozenset() for v in graph.inputs)
        self.any_open = any(self.open)

    def exact_key(self, args: tuple, grad: bool) -> tuple:
        """Every size and stride as in `args`, requires_grad (under grad mode), dtype and device."""
        return tuple((a.shape, a.stride(), a.requires_grad and grad, a.dtype, a.device)
                     if isinstance(a, torch.Tensor) else (type(a), a) for a in args)

    def open_key(self, args: tuple, grad: bool) -> tuple | None:
        """The key of the open variant for `args` (open dims as None), or None when the call cannot take one."""
        if not self.any_open:
            return None
        key = []
        for a, dims in zip(args, self.open):
            if not isinstance(a, torch.Tensor):
                key.append((type(a), a))
                continue
            if dims and (not a.is_contiguous() or any(a.shape[d] < 2 for d in dims)):
                return None
            key.append((tuple(None if d in dims else n for d, n in enumerate(a.shape)), a.requires_grad and grad,
                        a.dtype, a.device))
        return ("open", *key)

    def open_fits(self, args: tuple, grad: bool) -> Callable[[tuple], bool]:
        """A check that a call's arguments have the open key of `args` (`open_key(a, grad) == open_key(args,
        grad)`), as generated code: run at every call of a graph with open dims (a loop body whose sizes
        grow), where computing the key in Python costs more than the generated test."""
        env: dict[str, Any] = {"Tensor": torch.Tensor}
        terms = [f"len(a) == {len(args)}"]
        for i, (a, dims) in enumerate(zip(args, self.open)):
            t = f"a[{i}]"
            if not isinstance(a, torch.Tensor):
                env[f"ty{i}"], env[f"v{i}"] = type(a), a
                terms.append(f"type({t}) is ty{i} and {t} == v{i}")
                continue
            env[f"dt{i}"], env[f"dev{i}"] = a.dtype, a.device
            terms.append(f"isinstance({t}, Tensor) and {t}.dtype is dt{i} and {t}.device == dev{i}")
            if grad:
                terms.append(f"{t}.requires_grad is {a.requires_grad}")
            shape = f"{t}.shape"
            terms.append(f"len({shape}) == {a.dim()}")
            terms += [f"{shape}[{d}] >= 2" if d in dims else f"{shape}[{d}] == {n}" for d, n in enumerate(a.shape)]
            if dims:
                terms.append(f"{t}.is_contiguous()")
        code = compile("lambda a: " + " and ".join(terms), "<torch_autograph open-layout check>", "eval")
        return eval(code, env)  # noqa: S307 - our own generated code

    def examples(self, args: tuple, open_dims: bool) -> tuple[list[Any], Any]:
        """Fake tensors like `args` (open dims symbolic when `open_dims`), and the fake mode they belong to."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

        mode = FakeTensorMode(shape_env=ShapeEnv())
        fakes: list[Any] = []
        for a, dims in zip(args, self.open):
            if not isinstance(a, torch.Tensor):
                fakes.append(a)
                continue
            sizes = [DimDynamic.DYNAMIC if open_dims and d in dims else DimDynamic.STATIC for d in range(a.dim())]
            fakes.append(mode.from_tensor(a, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes)))
        return fakes, mode

    @staticmethod
    def open_guard(mode: Any, fakes: list[Any]) -> Callable[[tuple], bool]:
        """What the compile with symbols assumed about the sizes of `fakes`, as a check of a call's arguments."""
        from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

        env = mode.shape_env
        code = env.produce_guards_expression(fakes)
        if not code:
            return lambda args: True
        # torch names the arguments L['t0'], L['t1'], ...: as parameters of one function the check costs no dict.
        names = [f"t{i}" for i in range(len(fakes))]
        body = re.sub(r"L\['(t\d+)'\]", r"\1", code)
        if re.search(r"\bL\[", body):  # another form than expected: evaluate torch's code as it is
            compiled = compile(code, "<torch_autograph open-size guard>", "eval")

            def check(args: tuple) -> bool:
                return bool(eval(compiled, SYMPY_INTERP, {"L": dict(zip(names, args))}))  # noqa: S307
        else:
            fn = eval(compile(f"lambda {', '.join(names)}: bool({body})", "<torch_autograph open-size guard>",
                              "eval"), dict(SYMPY_INTERP))  # noqa: S307 - torch's guard code

            def check(args: tuple) -> bool:
                return fn(*args)

        check.code = code  # for tests and messages
        return check


def compile_in_context(compile_fn: Callable[[Any, list], Callable], gm: Any, fakes: list[Any], mode: Any
                       ) -> Callable:
    """`compile_fn(gm, fakes)` inside a TracingContext of `mode`: inductor then sees the shape environment (and
    caches the compile on disk)."""
    from torch._guards import TracingContext, tracing

    with tracing(TracingContext(mode)):
        return compile_fn(gm, fakes)
