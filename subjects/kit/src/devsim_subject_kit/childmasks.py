"""Visible-device masks that stack: a process started with its own mask sees what that mask leaves of the box.

A session child runs with exactly its profile's visible-device variables. A process it starts (a test's
subprocess, a project's worker) inherits them, or a changed set when the code under test changed `os.environ`
or passed `env=`. On a real machine the runtime of that process reads its own variables: ROCr applies
`ROCR_VISIBLE_DEVICES` to the box, HIP then applies `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES` when HIP's
is unset or empty) to what ROCr left, as indices into ROCr's list; a CUDA build reads `CUDA_VISIBLE_DEVICES`.
So masks stack: `ROCR_VISIBLE_DEVICES=1` with `HIP_VISIBLE_DEVICES=1` on a two-GPU box leaves no GPU.

devsim holds the one model of those rules (`src/visible/`, checked against PyTorch and the drivers); this
module asks it (`devsim visible --stdin-jsonl`) for the runtime's view under a process's own variables:
`stacked_host` for a session process whose variables differ from its profile's (the plugin's boot), and
`rocr_view` for `rocminfo`, which lists ROCr's agents (ROCR_VISIBLE_DEVICES narrows it, HIP's does not).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from typing import Any

from .host import VISIBLE_ENV


class MaskError(Exception):
    """devsim could not be asked, or the variables cannot be applied (the runtime then exposes no GPU)."""


def visible_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The visible-device variables set in `environ`."""
    return {name: environ[name] for name in VISIBLE_ENV if name in environ}


def runtime_view(devsim: str, build: str, uuids: list[str], env: Mapping[str, str]) -> list[int]:
    """The physical GPUs the runtime exposes under `env`, in ordinal order (devsim's model)."""
    line = json.dumps({"build": build, "uuids": uuids, "env": dict(env)})
    try:
        done = subprocess.run([devsim, "visible", "--stdin-jsonl"], input=line + "\n", capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MaskError(f"failed to run {devsim} visible: {exc}") from exc
    if done.returncode != 0:
        raise MaskError(f"{devsim} visible exited {done.returncode}: {done.stderr.strip()[-500:]}")
    try:
        answer = json.loads(done.stdout.splitlines()[0])
    except (IndexError, json.JSONDecodeError) as exc:
        raise MaskError(f"{devsim} visible printed no answer: {exc}") from exc
    if "error" in answer:
        raise MaskError(str(answer.get("message") or answer["error"]))
    return [int(i) for i in answer["runtime"]]


def rocr_view(devsim: str, uuids: list[str], environ: Mapping[str, str]) -> list[int]:
    """The box's GPUs ROCr lists under `environ` (only `ROCR_VISIBLE_DEVICES` narrows it); none when it is
    malformed past ROCr's reading."""
    mask = environ.get("ROCR_VISIBLE_DEVICES")
    if mask is None:
        return list(range(len(uuids)))
    try:
        return runtime_view(devsim, "hip", uuids, {"ROCR_VISIBLE_DEVICES": mask})
    except MaskError:
        return []


def stacked_host(message: dict[str, Any], environ: Mapping[str, str], devsim: str) -> dict[str, Any]:
    """The host message for a process whose visible-device variables are `environ`'s: `message` itself when they
    are the profile's, else with `env` and `visible` (the runtime's view) recomputed. Variables the runtime cannot
    apply leave no GPU, as on the machine (every runtime call then fails)."""
    own = visible_env(environ)
    if message.get("torch") not in ("cuda", "hip") or own == dict(message.get("env") or {}):
        return message
    uuids = [str(g.get("uuid") or "") for g in message.get("gpus", [])]
    try:
        visible = runtime_view(devsim, str(message["torch"]), uuids, own)
    except MaskError:
        visible = []
    return {**message, "env": own, "visible": visible, "current": 0}
