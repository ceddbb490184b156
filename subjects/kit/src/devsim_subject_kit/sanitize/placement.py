"""Checks on tensor moves (`Tensor.to`, `Tensor.cuda`), from a project frame:

- `explicit-ordinal-kept`: a tensor on `cuda:N` moved to the indexless family (`"cuda"`, `torch.device("cuda")`,
  `device.type`, `.cuda()`) while another GPU is current: the move takes it to the current GPU, and the ordinal
  it had is lost (`t.to(device.type)` for a `cuda:1` device lands on GPU 0).
- `family-move-current`: a move to an explicit `cuda:0` (`"cuda:0"`, `0`, `torch.device("cuda", 0)`) of a tensor
  not on `cuda:0`, while another GPU is current: the `device.index or 0` pattern, a family move defaulted to
  ordinal 0 inside a GPU 1 context.

Both read only what the move is given and where the tensor is; the check runs once the cheap comparisons say a
move is suspect, so an ordinary move costs a few attribute reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import threadctx

if TYPE_CHECKING:
    from .core import Sanitizer


def install(san: Sanitizer) -> None:
    """Wrap `Tensor.to` and `Tensor.cuda`, and the CPU-backed GPU tensors' own."""
    from ..cpubacked import CpuBacked

    # a CPU-backed tensor's own `cuda` calls its `to`: wrapping both would count one move twice
    for owner, name, target in ((torch.Tensor, "to", _to_target), (torch.Tensor, "cuda", _cuda_target),
                                (CpuBacked, "to", _to_target)):
        original = vars(owner).get(name)
        if original is not None:
            san.patches.set(owner, name, _checked(san, original, target))


def _to_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs.get("device") if "device" in kwargs else (args[0] if args else None)


def _cuda_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    device = kwargs.get("device") if "device" in kwargs else (args[0] if args else None)
    return "cuda" if device is None else (torch.device("cuda", device) if isinstance(device, int) else device)


def _as_cuda(value: Any) -> torch.device | None:
    if isinstance(value, str):
        if not value.startswith("cuda"):
            return None
        try:
            value = torch.device(value)
        except RuntimeError:
            return None
    elif isinstance(value, int) and not isinstance(value, bool):
        return torch.device("cuda", value) if value >= 0 else None
    if isinstance(value, torch.device) and value.type == "cuda":
        return value
    return None


def _checked(san: Sanitizer, original: Callable[..., Any], target: Callable[..., Any]) -> Callable[..., Any]:
    def move(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        to = _as_cuda(target(args, kwargs))
        if to is not None:
            _judge(san, tensor, to)
        return original(tensor, *args, **kwargs)

    move.__wrapped__ = original  # type: ignore[attr-defined]
    return move


def _judge(san: Sanitizer, tensor: torch.Tensor, to: torch.device) -> None:
    source = tensor.device
    current = san.current()
    if to.index is None:
        if source.type != "cuda":  # a GPU tensor's own `to` asks torch.cuda.current_device, checked there
            threadctx.check(san, current)
        if source.type == "cuda" and source.index is not None and source.index != current:
            san.table.hit("explicit-ordinal-kept",
                          f"a tensor on {source} moved to the indexless {str(to)!r} lands on cuda:{current} (the "
                          f"current GPU), not on cuda:{source.index}: move to the device as given, ordinal "
                          "included", depth=2)
    elif to.index == 0 and current != 0 and source != to:
        san.table.hit("family-move-current",
                      f"a tensor on {source} moved to the explicit cuda:0 while cuda:{current} is current: a "
                      "family move belongs on the current GPU (\"cuda\", never `index or 0`)", depth=2)
