"""devsim's Python subject kit: build a devsim subject for a Python project (docs/subject-kit.md).

- `serve(load)`: the protocol loop (a fork server for simulated runs, in-process for live runs);
- `Subject`: the interface an adapter implements;
- `SimulatedTorch` / `LiveTorch`: torch's device API patched to a scenario's host, or the real torch wrapped;
- `ProjectState`: import-time constants re-evaluated per host, caches cleared, declared tables restored
  (`Reset`), the reuse check;
- `Host`, `Gpu`: the scenario's host as devsim sends it; `Recorder`: trace events of a step.
"""

from .host import Gpu, Host, HostError
from .protocol import Fatal, ProtocolError, check_step
from .recorder import MoveCapture, Recorder
from .server import serve
from .state import Constant, ProjectState, Reset
from .subject import Subject, TorchHost

__all__ = [
    "Constant",
    "Fatal",
    "Gpu",
    "Host",
    "HostError",
    "MoveCapture",
    "ProjectState",
    "ProtocolError",
    "Recorder",
    "Reset",
    "Subject",
    "TorchHost",
    "check_step",
    "serve",
]
