"""The parent's heap collapse (hugepages) picks only private anonymous memory, keeps what it holds, and is off
when asked."""

from __future__ import annotations

import os

import pytest
from devsim_subject_kit import hugepages

MAPS = """\
55d0c0000000-55d0c0a00000 rw-p 00000000 00:00 0                          [heap]
7f0000100000-7f0000900000 rw-p 00000000 00:00 0
7f0001000000-7f0001400000 rw-s 00000000 00:05 12                         /dev/shm/x
7f0002000000-7f0002400000 rw-p 00001000 08:01 99                         /usr/lib/libtorch.so
7f0003000000-7f0003400000 r--p 00000000 00:00 0
7f0004000000-7f0004100000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0                          [stack]
"""


def test_only_private_anonymous_memory_in_whole_huge_pages():
    huge = 2 << 20
    assert hugepages.ranges(MAPS) == [
        (0x55D0C0000000, 0xA00000),  # the brk heap, aligned already
        (0x7F0000200000, 0x600000),  # rounded in to huge-page bounds at both ends
    ]  # shared, file-backed, read-only, too small and the stack are left as they are
    assert all(start % huge == 0 and length % huge == 0 for start, length in hugepages.ranges(MAPS))


def test_collapse_keeps_what_memory_holds_and_a_fork_sees_it():
    data = bytearray(os.urandom(8 << 20))
    before = bytes(data)
    hugepages.collapse_heap()
    assert bytes(data) == before
    pid = os.fork()
    if pid == 0:  # the child writes into memory shared with the parent: its own copy changes, not the parent's
        data[0] ^= 0xFF
        os._exit(0 if bytes(data[1:]) == before[1:] and data[0] != before[0] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert bytes(data) == before


def test_off_when_asked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DEVSIM_SUBJECT_HUGEPAGES", "0")
    assert not hugepages.enabled()
    assert hugepages.collapse_heap() == 0
