"""Fixtures of the backend tests."""

from __future__ import annotations

import types

import pytest

from torch_autograph.backends import tiering


@pytest.fixture
def trial(monkeypatch):
    """jit_compile="auto"'s trial on the caller's calls, without flaky clocks.

    `trial.keep(which)`: every entry still runs its calls and is timed, then the real decision runs on timings
    that make `which` the fastest ("default", a label such as "frozen" or "by reference"; True: the first
    compiled entry; False: the default). `trial.finish(cf, call)`: `call()` until the trial of `cf` decided.
    """
    def keep(which) -> None:
        real = tiering._Trial.decide

        def decided(self) -> None:
            assert all(len(t) == self.CALLS and all(s > 0 for s in t) for t in self.times)  # each ran, timed
            label = "default" if which is False else which
            best = self.labels.index(label) if label in self.labels else 1
            self.times = tuple([1e-3 if i == best else 1.0] * self.CALLS for i in range(len(self.times)))
            real(self)

        monkeypatch.setattr(tiering._Trial, "decide", decided)

    def finish(cf, call) -> None:
        on_trial = cf._fn
        assert isinstance(on_trial, tiering._Trial), on_trial
        while on_trial.calls < len(on_trial.fns) * on_trial.CALLS:
            call()
        assert cf._fn is not on_trial

    return types.SimpleNamespace(keep=keep, finish=finish)
