"""AOTInductor packages of exported functions: loaded in a fresh Python process, and run from C++ (examples/cpp)."""

import os
import pathlib
import runpy
import shutil
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cpp"
HAVE_TOOLS = all(shutil.which(t) for t in ("cmake", "c++")) or all(shutil.which(t) for t in ("cmake", "g++"))
pytestmark = [pytest.mark.cpp, pytest.mark.skipif(not HAVE_TOOLS, reason="needs a C++ compiler and CMake")]

LOAD_PACKAGE = '''
import sys, torch
from torch._inductor import aoti_load_package
run = aoti_load_package(sys.argv[1])
tensors = []
for line in open(sys.argv[2]):
    kind, rank, *rest = line.split()
    sizes, values = [int(s) for s in rest[:int(rank)]], [float(v) for v in rest[int(rank):]]
    tensors.append(torch.tensor(values, dtype=torch.float32 if kind == "f" else torch.int64).reshape(sizes))
*inputs, expected = tensors
(out,) = run(*inputs)
torch.testing.assert_close(out, expected)
print("package output matches", tuple(out.shape))
'''


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The example saved with aot_compile=True (one AOTInductor compile, shared by the tests here)."""
    # In this process (the loading test below is the fresh one): the example's main(), as its command line runs it;
    # fork_rng keeps the seed it sets at import to the example.
    out = tmp_path_factory.mktemp("cpp_demo")
    with torch.random.fork_rng():
        runpy.run_path(str(EXAMPLE / "export_model.py"), run_name="export_model")["main"](str(out))
    return out


def test_the_aoti_package_loads_in_a_fresh_process_and_matches(saved):
    done = subprocess.run([sys.executable, "-c", LOAD_PACKAGE, str(saved / "aoti" / "call_0.pt2"),
                           str(saved / "tensors.txt")], capture_output=True, text=True, cwd=saved)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "package output matches (5, 4)" in done.stdout


def test_the_saved_model_runs_its_aoti_packages_and_refuses_gradients(saved):
    import torch_autograph as ta

    loaded = ta.saved_model.load(saved, aoti=True)
    lines = (saved / "tensors.txt").read_text().splitlines()
    x = torch.tensor([float(v) for v in lines[0].split()[4:]]).reshape(5, 4)
    expected = torch.tensor([float(v) for v in lines[2].split()[4:]]).reshape(5, 4)
    torch.testing.assert_close(loaded(x, torch.tensor(6)), expected)
    with pytest.raises(RuntimeError, match="an AOTInductor package computes forward only"):
        loaded(x.requires_grad_(), torch.tensor(6))


@pytest.mark.slow  # a CMake build (~20 s); `make cpp-demo` runs the same steps
def test_the_cpp_demo_builds_and_runs_the_package(saved):
    build = saved / "cmake"
    prefix = torch.utils.cmake_prefix_path
    subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    f"-DCMAKE_PREFIX_PATH={prefix}"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j", "2"], check=True, capture_output=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(pathlib.Path(torch.__file__).parent / "lib")}
    done = subprocess.run([str(build / "demo"), str(saved / "aoti" / "call_0.pt2"), str(saved / "tensors.txt")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr  # the demo exits 1 if it differs from Python
    assert "max abs difference from Python: " in done.stdout
