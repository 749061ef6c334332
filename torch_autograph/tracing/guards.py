"""What a trace depends on besides its arguments, and what must not happen while tracing.

- Module modes: a global forward pre-hook (`module_entered`, registered by
  the trace patch table while some thread traces), records which modules ran (and, with a forward hook, which module
  each node is recorded in: `Node.scope`); their `train()`/`eval()` flags at the
  entry of the call guard the trace (checked at every call). A function that
  sets a mode itself (`model.train()` in converted code, staged by
  staging/calls.py) changes it while tracing, so the rest of the trace sees
  it, and records the call to run at every call of the graph; the trace is
  guarded by the flags the modules had before the change (one trace per
  distinct entry state, however often two functions switch the mode back and
  forth), and the flags are restored when the trace ends.
- Optimizer steps: a global step pre-hook (`optimizer_step_while_tracing`) refuses an optimizer step taken at
  trace time, which would update parameters once, with stale gradients.
- Collectives that would run at trace time are refused by interop/'s patches
  (interop/collectives.py), which the trace's `TraceHooks` install.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from .context import current
from .locations import user_location


def module_entered(module: torch.nn.Module, inputs: Any) -> None:
    """torch's global forward pre-hook while tracing: the module runs in the current trace."""
    state = current()
    if state is not None:
        state.trace.modules.ran[id(module)] = module
        state.trace.modules.modes.ran(module)
        stack = state.trace.modules.stack
        stack.append((module, _module_path(stack[-1] if stack else None, module)))


def module_left(module: torch.nn.Module, inputs: Any, output: Any) -> None:
    """Leave the module (registered with always_call: also when its forward raised)."""
    state = current()
    if state is not None:
        stack = state.trace.modules.stack
        if stack and stack[-1][0] is module:
            stack.pop()


def _module_path(parent: tuple[torch.nn.Module, str] | None, module: torch.nn.Module) -> str:
    """`Sequential.0`: the outermost module's class name, then the attribute names down to `module`."""
    if parent is not None:
        for name, child in parent[0]._modules.items():
            if child is module:
                return f"{parent[1]}.{name}"
        for name, child in parent[0].named_modules():  # deeper: `self.layers[0](x)` in the parent's forward
            if child is module and name:
                return f"{parent[1]}.{name}"
        return f"{parent[1]}.{type(module).__name__}"  # called by the parent, but not one of its modules
    return type(module).__name__


def optimizer_step_while_tracing(optimizer: Any, args: Any, kwargs: Any) -> Any:
    """An optimizer step while tracing would update parameters once, now, with stale gradients: the trace's
    `TraceHooks.trace_time_step` stages it where it can; otherwise refuse it."""
    state = current()
    if state is not None:
        stage = state.trace.hooks.trace_time_step
        staged = stage(optimizer, args, kwargs) if stage is not None else None
        if staged is not None:
            return staged
        loc = user_location()
        raise RuntimeError(
            f"{type(optimizer).__name__}.step() was called while tracing{' at ' + str(loc) if loc else ''}: it "
            f"would run once, now, with the gradients of an earlier call, instead of at every call of the graph. "
            f"Fix: let AutoGraph convert the function (ta.function(autograph=True), the default), which stages "
            f"optimizer.step() to run when the graph runs, or call ta.py_function(optimizer.step, [], Tout=None) instead.")




# torch modules whose forward never reads `self.training`: their mode cannot change a trace,
# so they need no per-call guard. Subclasses (user code) are always guarded.
_MODE_FREE_MODULES = frozenset(getattr(torch.nn, n) for n in (
    "Linear", "Bilinear", "Identity", "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid",
    "Softplus", "Softsign", "Softmax", "LogSoftmax", "Hardtanh", "Hardswish", "Hardsigmoid", "Tanhshrink",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LayerNorm", "GroupNorm", "Embedding", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "Upsample", "PixelShuffle", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
) if hasattr(torch.nn, n))


class ModuleModes:
    """The train/eval flags one trace depends on, as they were when the call entered.

    Attributes:
        entry: id -> (module, its flag before the trace changed it), for every module that ran and
            every module whose mode a staged `train()`/`eval()` set.
        targets: ids of the modules whose `train()`/`eval()` the function called (guarded whatever
            their type: the function may have read their flag).
        changed: id -> module, the modules whose flag the trace set (restored when it ends).
    """

    def __init__(self) -> None:
        self.entry: dict[int, tuple[torch.nn.Module, bool]] = {}
        self.targets: set[int] = set()
        self.changed: dict[int, torch.nn.Module] = {}

    def ran(self, module: torch.nn.Module) -> None:
        self.entry.setdefault(id(module), (module, module.training))

    def will_set(self, module: torch.nn.Module) -> None:
        """`module.train()` / `.eval()` is about to run while tracing: keep the flags it changes."""
        self.targets.add(id(module))
        for m in module.modules():
            self.entry.setdefault(id(m), (m, m.training))
            self.changed[id(m)] = m

    def guards(self) -> tuple[tuple[weakref.ref, bool], ...]:
        """(module, entry flag) for the modules whose mode may change what the trace computes."""
        return tuple((weakref.ref(m), flag) for key, (m, flag) in self.entry.items()
                     if key in self.targets or type(m) not in _MODE_FREE_MODULES)

    def restore(self) -> None:
        """Put back the flags the trace changed: the graph sets them at every call, tracing leaves none."""
        for key, m in self.changed.items():
            m.training = self.entry[key][1]


class TracedModules:
    """The modules a trace saw.

    Attributes:
        ran: id -> module, for every module whose forward ran in the trace, in order.
        stack: the modules whose forward is running, outermost first, with their paths (`Node.scope`).
        modes: their train/eval flags at the call's entry (the trace's guards).
    """

    def __init__(self) -> None:
        self.ran: dict[int, torch.nn.Module] = {}
        self.stack: list[tuple[torch.nn.Module, str]] = []
        self.modes = ModuleModes()


def module_guards(state: Any) -> tuple[tuple[weakref.ref, bool], ...]:
    """(module, training flag at the call's entry) for every module whose mode the trace depends on."""
    return state.trace.modules.modes.guards()
