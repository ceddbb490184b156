"""Checks on the device a GPU query is handed (`torch.cuda.get_device_properties`, `get_device_capability`,
`get_device_name`, `mem_get_info`, `set_device`):

- `per-target-arch`: a CPU device (`"cpu"`, `torch.device("cpu")`) handed to a GPU query, as when a
  model's dtype is decided from the properties of the device its VAE sits on and that device is the CPU. torch
  raises `ValueError: Expected a cuda device, but got: cpu` there (the simulated host raises the same); the
  flag names the project's line even where the project catches the error.
- `visible-devices`: an entry of a visible-device mask used as an ordinal (`int(i) for i in
  os.environ["CUDA_VISIBLE_DEVICES"].split(",")`, see `masks`): the ordinal handed to the query is the number a
  project frame still on the stack made with `int()` from a mask entry, and that number is not the entry's
  position in the mask (ordinals count the visible devices from 0; in `"0,1"` each entry is its position, and
  nothing is flagged).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import masks

if TYPE_CHECKING:
    from .core import Sanitizer

#: The torch.cuda queries whose device argument is checked.
QUERIES = ("get_device_properties", "get_device_capability", "get_device_name", "mem_get_info", "set_device")


def install(san: Sanitizer) -> None:
    """Wrap each query of `QUERIES` that torch.cuda has."""
    for name in QUERIES:
        original = getattr(torch.cuda, name, None)
        if original is not None:
            san.patches.set(torch.cuda, name, _checked(san, name, original))


def _is_cpu(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cpu"
    return isinstance(device, str) and device.strip().split(":")[0] == "cpu"


def _checked(san: Sanitizer, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def query(*args: Any, **kwargs: Any) -> Any:
        device = args[0] if args else kwargs.get("device")
        if device is not None and san.host().has_gpu_runtime:
            if _is_cpu(device):
                san.table.hit("per-target-arch",
                              f"a CPU device ({device!r}) handed to torch.cuda.{name}, a GPU query: decide for a "
                              "CPU target without asking a GPU (torch raises ValueError here)")
            elif isinstance(device, int) and not isinstance(device, bool):
                made = masks.ordinal_from_mask(device, sys._getframe(1))
                if made is not None:
                    variable, entry, position = made
                    san.table.hit("visible-devices",
                                  f"the {variable} entry {entry!r} (at position {position}) used as the device "
                                  f"ordinal {device} for torch.cuda.{name}: ordinals count the visible devices "
                                  "from 0, whatever the mask names")
        return original(*args, **kwargs)

    query.__wrapped__ = original  # type: ignore[attr-defined]
    return query
