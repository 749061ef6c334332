"""Interop with torch's own libraries while tracing: every torch patch, and what each stages.

- `patches.py`, `torch_patches.py`: the one table of torch attributes the package replaces and process-wide
  hooks it registers, and when (`TRACE_PATCHES` while a trace runs, `WATCH_PATCHES` while frozen code is alive,
  `TAPE_PATCHES` while a GradientTape watches accessed variables); nothing is replaced by importing the package.
- `module_hooks.py`: torch's global module and optimizer-step hooks, as entries of that table.
- `training.py`: optimizer, LR-scheduler and GradScaler methods staged as nodes; `grads.py`: `.grad` as a
  graph value (the trace's `read_grad` / `write_grad` / `after_backward` plug-ins).
- `ddp.py`, `fsdp.py`: DistributedDataParallel's and FSDP2's per-call Python as nodes.
- `collectives.py`: torch.distributed collectives recorded as nodes (the trace's special calls);
  `rnn_cells.py`: torch's RNN cells recorded with shape inference that reads no size as an int.
- `data_watch.py`: writes to frozen captures that move no version counter.
- `lazy_dynamo.py`: keeps `torch._dynamo` unloaded while a trace's meta kernels run.
"""

from . import collectives, grads, rnn_cells
from .data_watch import FrozenDataWatch
from .patches import Hook, Patch, PatchSet
from .torch_patches import TAPE_PATCHES, TRACE_PATCHES, WATCH_PATCHES, table
from .training import is_staged, stage_call, stage_trace_time_step

__all__ = ["TAPE_PATCHES", "TRACE_PATCHES", "WATCH_PATCHES", "Hook", "Patch", "PatchSet", "FrozenDataWatch", "collectives", "grads", "is_staged", "rnn_cells", "stage_call",
           "stage_trace_time_step", "table"]
