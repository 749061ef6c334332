#!/usr/bin/env bash
# The GPU checks in one go, for a machine with a CUDA device: every test marked `cuda`, then P8
# (benchmarks/bench_gpu.py). Prints everything; exits non-zero when either part fails.
#
#   bash benchmarks/gpu_check.sh            # from anywhere; BENCH_ARGS="--quick" for a short P8
#   PY=/path/to/python bash benchmarks/gpu_check.sh
#
# Python: $PY, else the first of .venv/bin/python and python3 whose torch sees a GPU (e.g. an image with
# a CUDA build of torch), else .venv/bin/python for a dry run. The package runs from this checkout
# (PYTHONPATH). If that Python lacks `gast` and nothing can be downloaded there, bring its wheel: on a
# connected machine `pip download --no-deps gast==0.7.0 -d .whl`, carry .whl along; it is installed
# into /tmp/ta_site.
set -u
cd "$(dirname "$0")/.."
sees_gpu() { "$1" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; }
if [ -z "${PY:-}" ]; then
  for candidate in .venv/bin/python python3; do
    if command -v "$candidate" >/dev/null && sees_gpu "$candidate"; then PY=$candidate; break; fi
  done
  # No GPU anywhere: a dry run, where every CUDA test skips and P8 prints its skip line.
  [ -z "${PY:-}" ] && { [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; }
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! "$PY" -c "import gast" 2>/dev/null; then
  if ls .whl/gast-*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/ta_site .whl/gast-*.whl || exit 2
    export PYTHONPATH="$PYTHONPATH:/tmp/ta_site"
  else
    echo "gpu_check: the package needs gast, which $PY lacks; put its wheel in .whl/ (see the header)" >&2
    exit 2
  fi
fi
"$PY" - <<'PYEOF'
import platform, torch
name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
print(f"gpu_check: Python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), GPU: {name}")
PYEOF
echo "== pytest -m cuda =="
"$PY" -m pytest tests -m cuda -p no:cacheprovider -q -rs
tests=$?
echo "== benchmarks/bench_gpu.py ${BENCH_ARGS:-} =="
"$PY" benchmarks/bench_gpu.py ${BENCH_ARGS:-}
bench=$?
echo "gpu_check: pytest exit $tests, bench_gpu exit $bench"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
