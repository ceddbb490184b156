"""torch.cuda's memory API on a simulated host: the caching allocator's statistics and `mem_get_info`.

A simulated GPU holds no tensor (they live on the CPU), so its caching allocator has allocated, reserved and
freed nothing: every statistic is 0, and `mem_get_info` answers (total, total) from the host's memory. The
statistics have the keys and types of a real allocator's: `torch._C._cuda_memoryStats` builds a nested dict
(pytorch torch/csrc/cuda/Module.cpp, `THCPModule_memoryStats`) of six counters (`num_alloc_retries`, `num_ooms`,
`max_split_size`, `num_sync_all_streams`, `num_device_alloc`, `num_device_free`), nine stat arrays (`allocation`,
`segment`, `active`, `inactive_split`, `allocated_bytes`, `reserved_bytes`, `active_bytes`,
`inactive_split_bytes`, `requested_bytes`; each `all`, `small_pool`, `large_pool` of `current`, `peak`,
`allocated`, `freed`) and two stats (`oversize_allocations`, `oversize_segments`). Only that bottom layer is
simulated: torch's own `memory_stats` flattens it ("reserved_bytes.all.current", sorted, an OrderedDict), and
`memory_allocated`, `memory_reserved`, `max_memory_allocated`, `memory_summary` read it as on a real GPU.

The device argument is read as torch reads it (`torch.cuda._utils._get_device_index(device, optional=True)`): an
int as is, None or an indexless "cuda" the current device, and a CPU device `ValueError("Expected a cuda
device, but got: cpu")`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The counters of a real allocator's statistics.
COUNTERS = ("num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams", "num_device_alloc",
            "num_device_free")
#: The stat arrays (one stat per pool).
STAT_ARRAYS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
               "active_bytes", "inactive_split_bytes", "requested_bytes")
#: The single stats.
STATS = ("oversize_allocations", "oversize_segments")
#: A stat array's pools, in the allocator's order.
POOLS = ("all", "small_pool", "large_pool")
#: A stat's fields.
FIELDS = ("current", "peak", "allocated", "freed")


def nested_stats() -> dict[str, Any]:
    """An idle allocator's statistics as `torch._C._cuda_memoryStats` returns them (nested, every value 0).
    `max_split_size` is the default limit's value, SIZE_MAX as a signed 64-bit integer: -1."""
    def stat() -> dict[str, int]:
        return dict.fromkeys(FIELDS, 0)

    result: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    result["max_split_size"] = -1
    for name in STAT_ARRAYS:
        result[name] = {pool: stat() for pool in POOLS}
    for name in STATS:
        result[name] = stat()
    return result


def memory_patches(initialized: Callable[[], bool], index: Callable[[Any], int], check: Callable[[int], None],
                   current: Callable[[], int], total: Callable[[int], int]) -> dict[str, Any]:
    """The `torch.cuda.memory` functions that reach the native allocator, answered from the host.

    `initialized()` tells whether the build has a GPU runtime (without one torch answers `{}`), `index(device)` reads a device argument as torch does (optional index), `check(ordinal)` raises for an
    ordinal the host lacks, `current()` is the current device (raising as torch does without a GPU runtime)
    and `total(ordinal)` a visible GPU's memory in bytes."""

    def ordinal(device: Any) -> int:
        found = index(device)
        check(found)
        return found

    def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
        if not initialized():
            return {}
        ordinal(device)
        return nested_stats()

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        if device is None:
            device = current()
        size = total(ordinal(device))
        return size, size

    def reset(device: Any = None) -> None:
        ordinal(device)

    return {
        "memory_stats_as_nested_dict": memory_stats_as_nested_dict,
        "mem_get_info": mem_get_info,
        "reset_peak_memory_stats": reset,
        "reset_accumulated_memory_stats": reset,
    }
