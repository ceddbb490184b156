"""Attribute patches that can be undone: the one place the kit changes torch's (or a project's) objects."""

from __future__ import annotations

from typing import Any

_ABSENT = object()


class Patches:
    """Records each attribute it replaces, so `undo` puts every original back (in reverse order)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace `owner.name` by `value`, remembering the original (or its absence). For a class, what the
        class itself holds is remembered (a classmethod as its descriptor; an inherited attribute as absent), so
        `undo` gives the class back exactly that."""
        original = vars(owner).get(name, _ABSENT) if isinstance(owner, type) else getattr(owner, name, _ABSENT)
        self._saved.append((owner, name, original))
        setattr(owner, name, value)

    def undo(self) -> None:
        """Restore every patched attribute."""
        while self._saved:
            owner, name, original = self._saved.pop()
            if original is _ABSENT:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, original)

    def __bool__(self) -> bool:
        return bool(self._saved)


class TorchOwner:
    """Only one torch host may be installed in a process at a time: torch's API is process-global."""

    installed: object | None = None

    @classmethod
    def claim(cls, host: object) -> None:
        """Mark `host` installed; a second, different host raises RuntimeError."""
        if cls.installed is not None and cls.installed is not host:
            raise RuntimeError("another torch host is installed in this process; uninstall it first")
        cls.installed = host

    @classmethod
    def release(cls, host: object) -> None:
        """Forget `host` (when it is the installed one)."""
        if cls.installed is host:
            cls.installed = None
