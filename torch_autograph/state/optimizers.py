"""Graph-compatible optimizers: SGD, Adam, AdamW, RMSprop, Adagrad (`ta.optimizers`).

Keras-style API (`apply_gradients`, `minimize`, `learning_rate`,
`iterations`) with `torch.optim`'s update rules and defaults. SGD, Adam and
AdamW run the ops of torch.optim's default CPU implementation with its scalar
precision (step sizes and bias corrections in float64, as torch computes them
in Python floats), so float32 parameters follow `torch.optim` bitwise, step
for step. The step count is the optimizer's (`iterations`, shared by its
variables), where torch counts per parameter: the two differ only for a
variable whose first update comes after the others'. They update
`ta.Variable`s and `nn.Parameter`s in place under `no_grad`, eagerly or inside
a `ta.function`, where the in-place ops are stateful graph nodes run at every
call. Slot state (momentum, moments) is created on the first update of each
variable: inside a `ta.function` that is the first call (the singleton rule),
as for Keras optimizers in `tf.function`.

    opt = ta.optimizers.Adam(learning_rate=1e-3)

    @ta.function
    def train_step(x, y):
        with ta.GradientTape() as tape:
            loss = F.cross_entropy(model(x), y)
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

`learning_rate` may be a float (kept in a Variable, so assigning a new float
later is seen by existing graphs), a `ta.Variable`, or a schedule
`fn(step) -> lr` called with the 0-based step as an int64 tensor.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable

import torch

from ..tracing import user_location
from .tape import GradientTape
from .variables import Variable

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


def _tensor_of(var: Any) -> torch.Tensor:
    return var._tensor if isinstance(var, Variable) else var


def _var_name(var: Any) -> str:
    if isinstance(var, Variable):
        return var.name
    return f"{type(var).__name__}(shape={tuple(var.shape)}, dtype={var.dtype})"


class Optimizer:
    """Base class: the step counter, learning rate, slots, and the gradient bookkeeping."""

    _slot_names: tuple[str, ...] = ()

    def __init__(self, learning_rate: Any, name: str) -> None:
        self.name = name
        self.iterations = Variable(torch.tensor(0, dtype=torch.int64), trainable=False, name=f"{name}/iterations")
        self._lr: Any = None
        self.learning_rate = learning_rate
        self._slots: dict[int, tuple[torch.Tensor, dict[str, Variable]]] = {}

    # ----- learning rate ---------------------------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        return self._lr

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(self._lr, Variable) and getattr(self, "_owns_lr", False):
                self._lr.assign(float(value))
                return
            self._lr = Variable(torch.tensor(float(value), dtype=torch.float64), trainable=False,
                                name=f"{self.name}/learning_rate")
            self._owns_lr = True
        elif isinstance(value, Variable) or callable(value):
            self._lr = value
            self._owns_lr = False
        else:
            raise TypeError(f"{self.name}: learning_rate must be a float, a ta.Variable or a callable schedule "
                            f"fn(step) -> lr; got {value!r}")

    def _current_lr(self, step: torch.Tensor) -> Any:
        lr = self._lr
        if isinstance(lr, Variable):
            return lr._read()
        return lr(step)

    # ----- slots ------------------------------------------------------------------------------
    def _slots_for(self, param: torch.Tensor) -> dict[str, Variable]:
        entry = self._slots.get(id(param))
        if entry is None or entry[0] is not param:
            slots = {n: Variable(self._slot_initializer(n, param), trainable=False, name=f"{self.name}/{n}")
                     for n in self._slot_names}
            entry = self._slots[id(param)] = (param, slots)
        return entry[1]

    def _slot_initializer(self, name: str, param: torch.Tensor) -> Callable[[], torch.Tensor]:
        return lambda: torch.zeros_like(param, memory_format=torch.preserve_format).detach()

    def get_slot(self, var: Any, name: str) -> Variable:
        """The slot Variable `name` (e.g. 'm', 'v', 'momentum') of `var`."""
        return self._slots[id(_tensor_of(var))][1][name]

    # ----- updates ----------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Any]]) -> Variable:
        """Apply one update per (gradient, variable); a None gradient is skipped with a warning.

        Returns the step counter `iterations` (incremented once per call).
        """
        pairs = []
        for g, var in list(grads_and_vars):
            if g is None:
                loc = user_location()
                warnings.warn(f"Gradients do not exist for variable {_var_name(var)} when applying gradients"
                              f"{' at ' + str(loc) if loc else ''}; it is not updated. Check that the loss depends "
                              f"on it.", stacklevel=2)
                continue
            param = _tensor_of(var)
            if not isinstance(param, torch.Tensor):
                raise TypeError(f"{self.name}.apply_gradients: expected a ta.Variable or a tensor (e.g. an "
                                f"nn.Parameter) to update, got {var!r}")
            if tuple(g.shape) != tuple(param.shape):
                loc = user_location()
                raise ValueError(f"{self.name}.apply_gradients: the gradient for {_var_name(var)} has shape "
                                 f"{tuple(g.shape)}, but the variable has shape {tuple(param.shape)}"
                                 f"{' at ' + str(loc) if loc else ''}. Pass (gradient, variable) pairs in the same "
                                 f"order, e.g. zip(tape.gradient(loss, params), params).")
            pairs.append((g, param))
        if not pairs:
            return self.iterations
        slots = [self._slots_for(p) for _, p in pairs]
        with torch.no_grad():
            lr = self._current_lr(self.iterations._read())
            if isinstance(lr, (int, float)):  # a schedule returning a Python number
                lr = torch.tensor(float(lr), dtype=torch.float64)
            self.iterations.assign_add(1)
            step = self.iterations._read()
            params, grads = [p for _, p in pairs], [g for g, _ in pairs]
            slot_tensors = [{k: v._read() for k, v in s.items()} for s in slots]
            if len({(p.dtype, p.device) for p in params}) == 1:
                self._update_all(params, grads, slot_tensors, lr, step)
            else:
                for p, g, s in zip(params, grads, slot_tensors):
                    self._update(p, g, s, lr, step)
        return self.iterations

    def _update_all(self, params: list, grads: list, slots: list[dict], lr: Any, step: Any) -> None:
        """Update every variable (all of one dtype and device); subclasses may use torch._foreach_* ops."""
        for p, g, s in zip(params, grads, slots):
            self._update(p, g, s, lr, step)

    def minimize(self, loss: Any, var_list: Any, tape: GradientTape | None = None) -> Variable:
        """Compute gradients of `loss` w.r.t. `var_list` and apply them.

        Args:
            loss: a callable returning the loss (recorded on a new tape), or,
                with `tape`, the loss tensor recorded on that tape.
            var_list: Variables / Parameters, or a callable returning them.
            tape: the tape that recorded `loss`.
        """
        if tape is None:
            if not callable(loss):
                raise TypeError(f"{self.name}.minimize: `loss` must be a callable when no tape is given "
                                f"(got {type(loss).__name__}); pass tape= with a loss tensor")
            with GradientTape() as tape:
                loss = loss()
        elif callable(loss):
            with tape:
                loss = loss()
        variables = list(var_list() if callable(var_list) else var_list)
        grads = tape.gradient(loss, variables)
        return self.apply_gradients(zip(grads, variables))

    def _update(self, p: torch.Tensor, g: Any, slots: dict[str, torch.Tensor], lr: Any, step: Any) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<ta.optimizers.{type(self).__name__} {self.name}>"


class SGD(Optimizer):
    """`torch.optim.SGD`: momentum (with dampening), Nesterov, L2 weight decay, maximize.

    The arithmetic is torch's, op for op (`add(p, alpha=wd)`, `mul_(momentum).add_(g, alpha=1 - dampening)`,
    `p += -lr * g` fused as torch's `add_(alpha=-lr)` is), so float32 updates are bitwise equal to
    `torch.optim.SGD`'s default implementation on CPU. As in torch, the momentum buffer starts as the first
    gradient (with `dampening` the first step therefore differs from later ones); "first" is this optimizer's
    first step (`iterations`, shared by all its variables).
    """

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, dampening: float = 0.0, maximize: bool = False,
                 name: str = "SGD") -> None:
        if isinstance(learning_rate, (int, float)) and learning_rate < 0:
            raise ValueError(f"SGD: invalid learning rate {learning_rate} (must be >= 0)")
        if momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: invalid {'momentum' if momentum < 0 else 'weight_decay'} "
                             f"{momentum if momentum < 0 else weight_decay} (must be >= 0)")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum > 0 and zero dampening")
        self.momentum, self.nesterov, self.weight_decay = momentum, nesterov, weight_decay
        self.dampening, self.maximize = dampening, maximize
        self._slot_names = ("momentum",) if momentum else ()
        super().__init__(learning_rate, name)

    def _update(self, p, g, slots, lr, step):
        if self.maximize:
            g = -g
        if self.weight_decay:
            g = g.add(p, alpha=self.weight_decay)
        if self.momentum:
            buf = slots["momentum"]
            if self.dampening:
                # torch's buffer is the first gradient as is; from then on `buf * m + (1 - dampening) * g`.
                later = buf.mul(self.momentum).add_(g, alpha=1 - self.dampening)
                buf.copy_(torch.where(step == 1, g, later))
            else:  # the buffer starts at zero: 0 * m + g is the first gradient exactly
                buf.mul_(self.momentum).add_(g)
            g = g.add(buf, alpha=self.momentum) if self.nesterov else buf
        # torch: p.add_(g, alpha=-lr), one fused multiply-add; addcmul with a 0-dim lr is the same kernel math.
        p.addcmul_(g, -lr)


class Adam(Optimizer):
    """`torch.optim.Adam`: L2 weight decay added to the gradient; optional AMSGrad and maximize.

    The update is torch's default (for-loop) implementation, op for op: the bias corrections and step size
    are computed in float64 from the step count, as torch computes them in Python floats, and every
    tensor op receives them where torch passes Python scalars. Float32 parameters therefore follow
    `torch.optim.Adam` bitwise on CPU (tests/state/test_optimizers.py checks 25 steps).
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False,
                 name: str = "Adam") -> None:
        if not (0.0 <= beta_1 < 1.0 and 0.0 <= beta_2 < 1.0):
            raise ValueError(f"{name}: betas must be in [0, 1); got beta_1={beta_1}, beta_2={beta_2}")
        if epsilon < 0 or weight_decay < 0:
            raise ValueError(f"{name}: epsilon and weight_decay must be >= 0; got {epsilon}, {weight_decay}")
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.weight_decay, self.amsgrad, self.maximize = weight_decay, amsgrad, maximize
        self._slot_names = ("m", "v", "vhat") if amsgrad else ("m", "v")
        super().__init__(learning_rate, name)

    def _decay(self, params: list, grads: list, lr: Any) -> list:
        """The gradients after weight decay (L2: `g + wd * p`, as torch's `g.add(p, alpha=wd)`)."""
        return torch._foreach_add(grads, params, alpha=self.weight_decay) if self.weight_decay else grads

    def _scalars(self, lr: Any, step: Any) -> tuple[Any, Any]:
        """(-step size, sqrt of the second bias correction) as float64 0-dim tensors, computed as torch does
        in Python floats: `beta ** step` and `x ** 0.5` are libm's pow (a 0-dim float64 pow is; `sqrt` and
        `pow(x, 0.5)` with a Python exponent differ from it in the last bit for some steps)."""
        step = step.to(torch.float64)
        bias1 = 1 - self.beta_1 ** step
        bias2_sqrt = torch.pow(1 - self.beta_2 ** step, torch.tensor(0.5, dtype=torch.float64))
        return -(lr / bias1), bias2_sqrt

    def _update(self, p, g, slots, lr, step):
        self._update_all([p], [g], [slots], lr, step)

    def _update_all(self, params, grads, slots, lr, step):
        # torch's per-parameter ops as multi-tensor ops: on CPU each runs the same kernel per tensor.
        if self.maximize:
            grads = torch._foreach_neg(grads)
        grads = self._decay(params, grads, lr)
        ms, vs = [s["m"] for s in slots], [s["v"] for s in slots]
        torch._foreach_lerp_(ms, grads, 1 - self.beta_1)
        torch._foreach_mul_(vs, self.beta_2)
        torch._foreach_addcmul_(vs, grads, grads, value=1 - self.beta_2)
        neg_step_size, bias2_sqrt = self._scalars(lr, step)
        if self.amsgrad:
            vhats = [s["vhat"] for s in slots]
            torch._foreach_maximum_(vhats, vs)
            vs = vhats
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, self.epsilon)
        # torch: p.addcdiv_(m, denom, value=-step_size), i.e. p + (-step_size * m) / denom
        torch._foreach_addcdiv_(params, torch._foreach_mul(ms, neg_step_size), denom)


class AdamW(Adam):
    """`torch.optim.AdamW`: Adam with decoupled weight decay (`p *= 1 - lr * weight_decay` first)."""

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.01, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-8, amsgrad: bool = False, maximize: bool = False,
                 name: str = "AdamW") -> None:
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, amsgrad, maximize, name)

    def _decay(self, params, grads, lr):
        if self.weight_decay:
            torch._foreach_mul_(params, 1 - lr * self.weight_decay)
        return grads


class RMSprop(Optimizer):
    """`torch.optim.RMSprop`'s rule: `rho` is torch's `alpha`; optional momentum and centering."""

    def __init__(self, learning_rate: Any = 0.01, rho: float = 0.99, momentum: float = 0.0, epsilon: float = 1e-8,
                 centered: bool = False, weight_decay: float = 0.0, name: str = "RMSprop") -> None:
        self.rho, self.momentum, self.epsilon = rho, momentum, epsilon
        self.centered, self.weight_decay = centered, weight_decay
        self._slot_names = ("rms",) + (("momentum",) if momentum else ()) + (("mg",) if centered else ())
        super().__init__(learning_rate, name)

    def _update(self, p, g, slots, lr, step):
        if self.weight_decay:
            g = g + self.weight_decay * p
        sq = slots["rms"]
        sq.mul_(self.rho).addcmul_(g, g, value=1 - self.rho)
        if self.centered:
            mg = slots["mg"]
            mg.lerp_(g, 1 - self.rho)
            avg = (sq - mg * mg).sqrt() + self.epsilon
        else:
            avg = sq.sqrt() + self.epsilon
        if self.momentum:
            buf = slots["momentum"]
            buf.mul_(self.momentum).add_(g / avg)
            p.sub_(lr * buf)
        else:
            p.sub_(lr * g / avg)


class Adagrad(Optimizer):
    """`torch.optim.Adagrad`'s rule: accumulated squared gradients, optional lr decay and weight decay."""

    def __init__(self, learning_rate: Any = 0.01, initial_accumulator_value: float = 0.0, epsilon: float = 1e-10,
                 lr_decay: float = 0.0, weight_decay: float = 0.0, name: str = "Adagrad") -> None:
        self.initial_accumulator_value, self.epsilon = initial_accumulator_value, epsilon
        self.lr_decay, self.weight_decay = lr_decay, weight_decay
        self._slot_names = ("accumulator",)
        super().__init__(learning_rate, name)

    def _slot_initializer(self, name, param):
        return lambda: torch.full_like(param, self.initial_accumulator_value).detach()

    def _update(self, p, g, slots, lr, step):
        if self.weight_decay:
            g = g + self.weight_decay * p
        clr = lr / (1 + (step - 1) * self.lr_decay)
        acc = slots["accumulator"]
        acc.addcmul_(g, g, value=1.0)
        p.sub_(clr * g / (acc.sqrt() + self.epsilon))
