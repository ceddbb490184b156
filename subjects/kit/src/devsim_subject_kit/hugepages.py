"""Back the fork server's heap with transparent huge pages before it forks a child per scenario (`collapse_heap`,
called by `server.serve` once the project is loaded).

A loaded subject holds hundreds of megabytes of anonymous memory (vLLM's, with torch and its selection code: about
640 MB). `fork` copies a page-table entry for every 4 KiB page of it and the child's exit tears them down again:
for vLLM about 16 ms of CPU in the parent and as much in the child, per scenario. Collapsing the heap into 2 MiB
pages once (`MADV_COLLAPSE`, Linux 6.1, about 300 ms in the parent, before the first scenario) leaves one entry per
2 MiB to copy; a child's write to a shared huge page splits it and copies the 4 KiB page written, as before. Only
where the memory lies changes, never what it holds, so no scenario can see it. Where the kernel refuses (no THP, an
older kernel, not Linux) nothing changes. `DEVSIM_SUBJECT_HUGEPAGES=0` turns it off (to time it).
"""

from __future__ import annotations

import ctypes
import os
import sys

#: madvise(2) advice (Linux uapi, mman-common.h). It collapses what is there whatever the sysfs THP mode, and marks
#: no mapping for huge pages: memory a child maps or faults in later still comes in 4 KiB pages.
MADV_COLLAPSE = 25
HUGE_PAGE = 2 << 20


def enabled() -> bool:
    """Whether the heap is collapsed (DEVSIM_SUBJECT_HUGEPAGES=0: never)."""
    return os.environ.get("DEVSIM_SUBJECT_HUGEPAGES", "1") != "0" and sys.platform == "linux"


def ranges(maps: str, huge: int = HUGE_PAGE) -> list[tuple[int, int]]:
    """The huge-page-aligned `(start, length)` spans of the private, writable, anonymous mappings (the brk heap
    included) in `maps`, the text of /proc/self/maps: no file, no shared memory, no stack."""
    spans = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        perms = fields[1]
        path = fields[5] if len(fields) > 5 else ""
        if not perms.startswith("rw") or perms[3:4] != "p" or path not in ("", "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start = (low + huge - 1) & ~(huge - 1)
        end = high & ~(huge - 1)
        if end > start:
            spans.append((start, end - start))
    return spans


def collapse_heap() -> int:
    """Ask the kernel to back this process's anonymous memory with huge pages; the bytes of the spans it collapsed
    whole (0 when turned off or refused: a span it cannot collapse stays as it was)."""
    if not enabled():
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        with open("/proc/self/maps") as maps:
            spans = ranges(maps.read())
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    done = 0
    for start, length in spans:
        if madvise(start, length, MADV_COLLAPSE) == 0:
            done += length
    return done
