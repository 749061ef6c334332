"""Shared fixtures: a fake staging backend installed for one test."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fake_backend  # noqa: E402


@pytest.fixture(autouse=True)
def no_backend():
    """Tests start with no staging backend (torch_autograph registers its own on import)."""
    from torch_autograph.autograph.operators import dispatch

    previous = dispatch.register_backend(None)
    yield
    dispatch.register_backend(previous)


@pytest.fixture
def backend(no_backend):
    """A FakeBackend registered for the duration of the test."""
    with fake_backend.installed() as b:
        yield b
