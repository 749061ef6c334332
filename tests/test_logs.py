"""Compile progress and trace lines: the `torch_autograph` loggers always, stderr as `ta.config.set_verbosity` says."""

from __future__ import annotations

import logging

import pytest
import torch

import torch_autograph as ta
from torch_autograph.backends import inductor


@pytest.fixture
def verbosity():
    yield ta.config.set_verbosity
    ta.config.set_verbosity(1)


class _Clock:
    """A perf_counter that makes the compile under test last `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.times = iter([100.0, 100.0 + seconds])

    def perf_counter(self) -> float:
        return next(self.times)


def _compile(monkeypatch, seconds: float) -> None:
    monkeypatch.setattr(inductor, "time", _Clock(seconds))
    with inductor.compile_progress("graph step"):
        pass


def test_a_slow_compile_says_so_once_on_stderr_and_logs_start_and_end(monkeypatch, capsys, caplog, verbosity):
    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    _compile(monkeypatch, 7.9)
    assert [r.getMessage() for r in caplog.records] == ["compiling graph step with inductor",
                                                        "compiled graph step with inductor in 7.90 s"]
    assert capsys.readouterr().err == ""  # the records reach a handler (caplog's): no second copy on stderr
    caplog.set_level(logging.WARNING, logger="torch_autograph.jit")
    logging.getLogger("torch_autograph.jit").setLevel(logging.NOTSET)
    _compile(monkeypatch, 7.9)
    assert capsys.readouterr().err == "torch_autograph: inductor compiled graph step in 7.9 s\n"


def test_a_quick_compile_is_silent_at_the_default_verbosity(monkeypatch, capsys, verbosity):
    _compile(monkeypatch, 0.4)
    assert capsys.readouterr().err == ""
    verbosity(2)
    _compile(monkeypatch, 0.4)
    assert capsys.readouterr().err == ("torch_autograph: compiling graph step with inductor\n"
                                       "torch_autograph: inductor compiled graph step in 0.4 s\n")


def test_verbosity_0_and_a_logger_level_above_info_silence_stderr(monkeypatch, capsys, verbosity):
    verbosity(0)
    _compile(monkeypatch, 9.0)
    assert capsys.readouterr().err == ""
    verbosity(1)
    log = logging.getLogger("torch_autograph")
    log.setLevel(logging.WARNING)
    try:
        _compile(monkeypatch, 9.0)
    finally:
        log.setLevel(logging.NOTSET)
    assert capsys.readouterr().err == ""


def test_verbosity_2_writes_a_line_per_trace(capsys, verbosity):
    verbosity(2)
    f = ta.function(lambda x: x * 2, name="double")
    f(torch.ones(2))
    f(torch.ones(2))
    f(torch.ones(3))
    err = capsys.readouterr().err.splitlines()
    assert err == ["torch_autograph: tracing double, trace #1 (x: TensorSpec(shape=(2,), dtype=torch.float32, "
                   "name=None, device='cpu')): first call",
                   "torch_autograph: tracing double, trace #2 (x: TensorSpec(shape=(3,), dtype=torch.float32, "
                   "name=None, device='cpu')): argument 'x': shape (2,) -> (3,)"]


def test_set_verbosity_rejects_other_levels():
    with pytest.raises(ValueError, match="the verbosity is 0, 1 or 2, got 3"):
        ta.config.set_verbosity(3)
