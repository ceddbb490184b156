"""Comfy-Org/ComfyUI PR #5586: `python main.py --cuda-device N` set only `CUDA_VISIBLE_DEVICES`; the fix also
sets `HIP_VISIBLE_DEVICES`, the variable a HIP build reads first.

Observed: ComfyUI's own startup (`main.py` run as `__main__` with `--cuda-device 1`, the project's code up to
the statement after its device selection, where it first imports `cuda_malloc`), then torch's own reading of
the visible-device variables of this process on the host's build (`torch.cuda._parse_visible_devices`, which on
a HIP build takes `HIP_VISIBLE_DEVICES` over `CUDA_VISIBLE_DEVICES`, as the HIP runtime does). Returned: whether
the process would see exactly physical GPU 1, as the user asked. Correct: True. The bug: False (a
`HIP_VISIBLE_DEVICES` already in the environment wins, and the process keeps every GPU it names).
Whether the bug shows depends on the host: judged per host (see the case file).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
from pathlib import Path
from typing import Any

#: The module main.py imports right after its device selection: the startup stops there.
STOP_AT = "cuda_malloc"


class _Reached(Exception):
    """main.py got to `import cuda_malloc`: the device selection is done."""


class _StopFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == STOP_AT:
            raise _Reached()
        return None


def _main_py() -> Path:
    import folder_paths  # a top-level module of ComfyUI's tree, beside main.py

    return Path(folder_paths.__file__).with_name("main.py")


def observe() -> object:
    import torch

    main = _main_py()
    saved_argv, saved_env = sys.argv[:], dict(os.environ)
    saved_out, saved_err = sys.stdout, sys.stderr  # main.py's setup_logger wraps them
    finder = _StopFinder()
    sys.meta_path.insert(0, finder)
    sys.argv = [str(main), "--cuda-device", "1"]
    try:
        try:
            runpy.run_path(str(main), run_name="__main__")
        except _Reached:
            pass
        else:
            raise AssertionError("main.py never reached its device selection")
        assert os.environ.get("CUDA_VISIBLE_DEVICES") == "1", "main.py did not take --cuda-device 1"
        visible = list(torch.cuda._parse_visible_devices())
    finally:
        sys.meta_path.remove(finder)
        sys.argv = saved_argv
        sys.stdout, sys.stderr = saved_out, saved_err
        os.environ.clear()
        os.environ.update(saved_env)
    return visible == [1]
