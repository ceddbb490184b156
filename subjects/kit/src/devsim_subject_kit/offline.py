"""What a simulated host lacks besides its GPUs: a network, and a user cache the code under test could fill.

Code under test that reaches further than the simulation expects (a kernel that fetches CUTLASS and builds itself
on first use) must neither download nor leave files on the machine running devsim. `isolate()` makes both fail
at once, with an error that says why: every socket connection is refused, and `XDG_CACHE_HOME` names a path that
cannot be created, so a cache written under it fails before anything is written. Live subjects keep both.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any, NoReturn

# under /dev/null, which is not a directory: no mkdir below it can succeed, on any machine
NO_CACHE = "/dev/null/devsim-simulated-host-has-no-user-cache"


_NETWORK = (socket.AF_INET, socket.AF_INET6)


def isolate() -> None:
    """Refuse every network connection and point the user cache where nothing can be written. Local sockets
    (`AF_UNIX`: a library's own inter-process channels) still connect."""
    os.environ["XDG_CACHE_HOME"] = NO_CACHE
    socket.socket.connect = _local_only(socket.socket.connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _local_only(socket.socket.connect_ex)  # type: ignore[method-assign]
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse


def _local_only(connect: Any) -> Any:
    def checked(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        if self.family in _NETWORK:
            _refuse()
        return connect(self, *args, **kwargs)

    return checked


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise OSError(errno.ENETUNREACH, "a simulated host has no network (devsim)")
