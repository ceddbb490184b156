"""A minimal subject on the kit, for the kit's own tests: `python toy_subject.py`.

It answers `discover` (torch's own device count and archs through the simulated torch) and `set_device`, keeps a
module-level counter to show that a scenario's state never reaches the next one, and misbehaves on request
(`TOY_MODE=print` prints to stdout during a step, `TOY_MODE=crash` dies in a step, `TOY_MODE=bad-answer`
writes an answer the schema refuses, `TOY_MODE=reach-out` answers what a connection and a user cache gave it,
`TOY_MODE=gc` answers what the garbage collector holds and leaves cyclic garbage with a finalizer behind).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devsim_subject_kit import Host, ProjectState, check_step, serve

STEPS_SEEN = [0]  # grows within a process: a fresh child starts from the parent's value


class Toy:
    def __init__(self, live: bool) -> None:
        from devsim_subject_kit.simtorch import SimulatedTorch

        self.torch_host = SimulatedTorch().install()
        self.state = ProjectState(("__main__",))  # run as a script
        self.state.plan()
        self.finalized: list[int] = []  # TOY_MODE=gc: the subject's own, outside the project state
        self.entered: list[Host] = []

    def handshake(self, protocol: int) -> dict[str, Any]:
        return {"type": "handshake", "protocol": protocol, "subject": {"name": "toy", "version": "1"},
                "actions": ["discover", "set_device"], "kernels": [], "events": ["device_count", "set_device"]}

    def enter(self, host: Host) -> str | None:
        self.entered = [host]  # TOY_MODE=gc: made as the scenario begins, before its steps
        reason = self.torch_host.enter(host)
        self.state.remember()
        return reason

    def step(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        check_step(msg)
        mode = os.environ.get("TOY_MODE", "")
        head = {"scenario": msg["scenario"], "number": msg["number"]}
        if mode == "gc":
            entered_collectable = any(obj is self.entered for obj in gc.get_objects())
            seen = [f"finalized {len(self.finalized)}", f"entered collectable {entered_collectable}"]
            _Cycle(self.finalized)
            return {"type": "observed", **head, "ok": True, "archs": seen, "trace": []}
        STEPS_SEEN[0] += 1
        if mode == "print":
            print("chatty library output")
        if mode == "crash":
            os._exit(7)
        if mode == "bad-answer":
            return {"type": "observed", **head, "ok": "yes", "trace": []}
        if mode == "reach-out":
            return {"type": "observed", **head, "ok": True, "archs": [_reach_out()], "trace": []}
        with self.torch_host.recorder.capture() as trace:
            if msg["action"] == "set_device":
                torch.cuda.set_device(msg["ordinal"])
                obs: dict[str, Any] = {"current_after": self.torch_host.current()}
            else:
                count = torch.cuda.device_count()
                obs = {"torch_device_count": count, "archs": [str(STEPS_SEEN[0])]}
        return {"type": "observed", **head, "ok": True, **obs, "trace": trace}

    def reusable(self) -> bool:
        return self.state.unchanged()


class _Cycle:
    """Garbage only a collection frees (it refers to itself), noting its finalization in `finalized`."""

    def __init__(self, finalized: list[int]) -> None:
        self.me, self.finalized = self, finalized

    def __del__(self) -> None:
        self.finalized.append(1)


def _reach_out() -> str:
    """What a network connection and the user cache give the code under test."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", 9), timeout=5).close()
        network = "connected"
    except OSError as exc:
        network = str(exc)
    return f"{network}; cache {os.environ.get('XDG_CACHE_HOME', '')}"


if __name__ == "__main__":
    sys.exit(serve(Toy))
