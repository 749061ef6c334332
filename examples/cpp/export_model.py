"""Export a function with a tensor loop for the C++ demo: an AOTInductor package, its inputs and expected outputs.

    python examples/cpp/export_model.py OUT_DIR

saves `refine` with `ta.saved_model.save(..., aot_compile=True)` into OUT_DIR
(OUT_DIR/aoti/call_0.pt2 is the AOTInductor package `main.cpp` loads) and writes
OUT_DIR/tensors.txt: the inputs and the expected output as plain text (one
tensor per line: dtype, rank, sizes, values), which the C++ program reads, runs,
and compares.
"""

import os
import sys

import torch

import torch_autograph as ta

torch.manual_seed(0)
W = torch.randn(4, 4) * 0.5


@ta.function(input_signature=[ta.TensorSpec([None, 4], torch.float32), ta.TensorSpec([], torch.int64)])
def refine(x, steps):
    """Apply a layer `steps` times, halving values that grow too large; stop early once they settle."""
    for _ in range(steps):
        y = torch.tanh(x @ W) + x
        if y.abs().max() > 4:
            y = y / 2
        if (y - x).abs().max() < 1e-3:
            break
        x = y
    return x


def line(t: torch.Tensor) -> str:
    kind = "f" if t.dtype.is_floating_point else "i"
    values = " ".join(repr(float(v)) if kind == "f" else str(int(v)) for v in t.reshape(-1).tolist())
    return f"{kind} {t.dim()} {' '.join(str(d) for d in t.shape)} {values}".replace("  ", " ")


def main(out_dir: str) -> None:
    ta.saved_model.save(refine, out_dir, aot_compile=True)
    package = os.path.join(out_dir, "aoti", "call_0.pt2")
    x, steps = torch.randn(5, 4), torch.tensor(6)  # 5 rows: the package takes any number
    with open(os.path.join(out_dir, "tensors.txt"), "w") as f:
        expected = refine.python_function(x, steps)  # eager PyTorch on the original function: the reference
        f.write("\n".join([line(x), line(steps), line(expected)]) + "\n")
    print(f"wrote {package}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/cpp-demo")
