"""devsim's Python subject kit: build a devsim subject for a Python project (docs/subject-kit.md).

- `serve(load)`: the protocol loop (a fork server for simulated runs, in-process for live runs);
- `Subject`: the base of an adapter, which owns the step loop (`@action` registers a step's handler;
  `Unsupported` and `Refused` are the answers a step gives instead of an observation); `Adapter`: what the
  server drives;
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
from .subject import Adapter, Refused, Subject, TorchHost, Unsupported, action

__all__ = [
    "Adapter",
    "Constant",
    "Fatal",
    "Gpu",
    "Host",
    "HostError",
    "MoveCapture",
    "ProjectState",
    "ProtocolError",
    "Recorder",
    "Refused",
    "Reset",
    "Subject",
    "TorchHost",
    "Unsupported",
    "action",
    "check_step",
    "serve",
]
