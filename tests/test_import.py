"""`import torch_autograph` loads what calling a function needs; the export path (exporting/, saved_model,
onnx, summary) is imported on first use."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_export_path_is_imported_on_first_use():
    code = ("import sys, torch, torch_autograph as ta\n"
            "late = ('torch_autograph.exporting', 'torch_autograph.saved_model', 'torch_autograph.onnx', "
            "'torch_autograph.summary')\n"
            "assert not [m for m in late if m in sys.modules], [m for m in late if m in sys.modules]\n"
            "assert ta.function(lambda x: x * 2)(torch.ones(2)).tolist() == [2.0, 2.0]\n"
            "assert not [m for m in late if m in sys.modules]\n"
            "assert callable(ta.saved_model.save) and callable(ta.onnx.export) and callable(ta.summary.graph)\n"
            "from torch_autograph import summary\n"
            "assert summary is ta.summary and 'saved_model' in dir(ta)\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_an_unknown_attribute_is_an_attribute_error():
    import pytest

    import torch_autograph as ta

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ta.nope  # noqa: B018
