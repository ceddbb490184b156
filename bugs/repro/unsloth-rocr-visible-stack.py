"""unsloth #6118 / PR #6123: `apply_gpu_ids` sets ROCR_VISIBLE_DEVICES to the HIP_VISIBLE_DEVICES value.

On a two-R9700 box a worker is asked for GPU 1 (`apply_gpu_ids([1])`, before `detect_hardware()`, so ROCm is
found through `torch.version.hip`). The buggy version writes `ROCR_VISIBLE_DEVICES=1` next to
`HIP_VISIBLE_DEVICES=1`: ROCr leaves one GPU, HIP then asks for index 1 of that list, and the worker the process
starts sees no GPU. The parent was launched with `ROCR_VISIBLE_DEVICES=0,1` (the commit message's example).

observe() runs the project's `apply_gpu_ids([1])`, starts a Python child with the resulting environment (the
training worker's place), and returns the number of GPUs torch sees in that child: 0 is the misbehaviour, 1 the
fix. The child boots the kit's simulated host itself (`devsim_subject_kit.session.boot`, the session
child's own entry) so that it runs on the same profile with its own visible-device variables; a child that is
not on a simulated host is a harness error, raised as RuntimeError, never a count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_CHILD = """
import json, sys
from devsim_subject_kit import session
booted = session.boot()
if booted is None or isinstance(booted, str):
    print(json.dumps({"error": f"not on a simulated host: {booted!r}"}))
    sys.exit(0)
import torch
print(json.dumps({"count": torch.cuda.device_count(), "hip": torch.version.hip}))
"""

_MASKS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


def observe() -> object:
    from utils.hardware.hardware import apply_gpu_ids

    saved = {name: os.environ.get(name) for name in _MASKS}
    try:
        for name in _MASKS:
            os.environ.pop(name, None)
        os.environ["ROCR_VISIBLE_DEVICES"] = "0,1"
        apply_gpu_ids([1])
        child_env = dict(os.environ)
    finally:
        for name in _MASKS:
            os.environ.pop(name, None)
        os.environ.update({name: value for name, value in saved.items() if value is not None})
    done = subprocess.run([sys.executable, "-c", _CHILD], env=child_env, capture_output=True, text=True,
                          timeout=120, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"child exited {done.returncode}: {done.stderr.strip()[-500:]}")
    answer = json.loads(lines[-1])
    if "error" in answer or answer.get("hip") is None:
        raise RuntimeError(f"child not on the simulated HIP host: {answer}")
    return int(answer["count"])
