# Two commands for a fresh machine with only Python: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow conformance docs bench bench-tf-setup bench-tf fuzz clean cpp-demo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch, pinned for development (the package itself accepts torch>=2.4).
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[test,docs,export]"
	# The extras must not have replaced the CPU build of torch.
	$(PY) -c "import sys, torch; sys.exit(0 if torch.__version__.startswith('2.13.0') else 'torch was replaced: ' + torch.__version__)"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/quickstart.py
	$(PY) examples/control_flow.py
	$(PY) examples/train_classifier.py
	$(PY) examples/train_gpt.py --quick

test: $(STAMP)
	$(PY) -m ruff check torch_autograph tests examples benchmarks
	$(PY) -m pytest tests

# The long randomised runs (10,000 programs each, 10,000 retraces): about an hour on 2 cores (the graph fuzz
# runs each program on three inputs, eagerly and as a graph, on ints and on floats with gradients).
test-slow: $(STAMP)
	$(PY) -m pytest tests -m slow -s

# The whole conformance corpus (tests/conformance: ported TensorFlow AutoGraph, MindSpore and pytorch/examples
# programs), eagerly and through ta.function, jit_compile=True included: the table per source and outcome.
# About 3 minutes on 2 cores; `make test` runs its fast subset.
conformance: $(STAMP)
	$(PY) tests/conformance/run_conformance.py

# The documentation site (docs/, mkdocs.yml) into site/; strict: a broken link, anchor or API reference fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# torchvision (the bench extra) without its torch pin, so the CPU build of torch stays, in a folder of its own
# that only the benchmarks see: a torchvision whose C++ ops cannot load on the CPU torch (the CUDA wheel a
# registry serves) stops transformers' model imports in the test venv (benchmarks/models.py works around it).
BENCH_SITE := .bench-site
bench: $(STAMP)
	test -d $(BENCH_SITE)/torchvision || $(PY) -m pip install --quiet --no-deps --target $(BENCH_SITE) "torchvision"
	PYTHONPATH=$(BENCH_SITE) $(PY) benchmarks/run_all.py

# Optional: TensorFlow's tf.function on the same workloads, from its own venv (about 300 MB).
bench-tf-setup:
	$(PYTHON) -m venv .venv-bench-tf
	.venv-bench-tf/bin/python -m pip install --quiet tensorflow-cpu

bench-tf: $(STAMP)
	$(PY) benchmarks/bench_vs_tensorflow.py

# A traced function with a tensor loop exported with AOTInductor and run from C++ (examples/cpp; needs CMake, g++).
CPP_DEMO := build/cpp-demo
cpp-demo: $(STAMP)
	$(PY) examples/cpp/export_model.py $(CPP_DEMO)
	cmake -S examples/cpp -B $(CPP_DEMO)/cmake -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_PREFIX_PATH="$$($(PY) -c 'import torch; print(torch.utils.cmake_prefix_path)')" > /dev/null
	cmake --build $(CPP_DEMO)/cmake -j 2
	LD_LIBRARY_PATH="$$($(PY) -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')" \
		$(CPP_DEMO)/cmake/demo $(CPP_DEMO)/aoti/call_0.pt2 $(CPP_DEMO)/tensors.txt

clean:
	rm -rf $(VENV) $(BENCH_SITE) build site *.egg-info
