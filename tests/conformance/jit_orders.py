"""The conformance corpus under `jit_compile=True` after the default backend, in a random order, in one process.

    python tests/conformance/jit_orders.py OUT ORDER_SEED [N]

Every program of the TensorFlow AutoGraph and MindSpore ports (and the pytorch/examples models) runs through
the harness on the default backend, then at once with `jit_compile=True`, in an order shuffled by ORDER_SEED
(the first N programs of that order, all when N is left out); `{program id: [default outcome, jit outcome,
its detail, the first lines of jit's fallback warnings]}` is written to OUT as JSON (with `strict`, a region
inductor refuses raises instead of falling back). tests/conformance/test_jit_orders.py runs it in several orders, each in its own
process from an empty inductor cache, and compares: jit's outcome must be the default backend's, whatever ran
before it.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import random
import sys
import warnings

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE)]  # this checkout's package, and the corpus's modules

import corpus  # noqa: E402
import harness  # noqa: E402

import torch_autograph as ta  # noqa: E402


def outcomes(order_seed: int, n: int | None = None) -> dict[str, list[str]]:
    """{program id: [default kind, jit kind, jit detail, fallbacks]} for the corpus in the order `order_seed`
    shuffles."""
    programs = corpus.programs()
    random.Random(order_seed).shuffle(programs)
    found = {}
    for p in programs[:n]:
        default = harness.run_case(p.case, p.path, jit=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            jit = harness.run_case(p.case, p.path, jit=True)
        fallbacks = sorted({str(w.message).splitlines()[0] for w in caught
                            if issubclass(w.category, ta.errors.JitFallbackWarning)})
        found[p.id] = [default.kind, jit.kind, jit.detail, fallbacks]
        print(f"{len(found)}/{len(programs[:n])} {p.id}: {default.kind} / {jit.kind}{' (fell back)' * bool(fallbacks)}",
              file=sys.stderr, flush=True)
    return found


def main(argv: list[str]) -> None:
    warnings.simplefilter("ignore")
    logging.getLogger("torch_autograph").setLevel(logging.ERROR)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    ta.config.set_verbosity(0)
    if "strict" in argv:
        ta.config.set_jit_strict(True)
    out, order_seed = argv[0], int(argv[1])
    n = int(argv[2]) if len(argv) > 2 and argv[2].isdigit() else None
    pathlib.Path(out).write_text(json.dumps(outcomes(order_seed, n), indent=0))


if __name__ == "__main__":
    main(sys.argv[1:])
