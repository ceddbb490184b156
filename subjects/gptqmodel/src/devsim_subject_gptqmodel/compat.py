"""Names the subject reaches for in GPTQModel that another release may lack.

The subject is written against GPTQModel 7.7.0; `devsim run --subject-src DIR` points it at any source tree
(7.3.4 lacks `utils.cpu_features`, `importer._device_family`, `importer.validate_quant_linear`, ...). Every such
name is looked up here, at its point of use: where a hook or a preload needs it, the subject warns once on
stderr and goes on without it; where a step needs it, the step answers `unsupported` naming the missing name
(`Lacking`), so devsim skips that scenario instead of every scenario breaking down. A skip is never a pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

from devsim_subject_kit import Unsupported

_warned: set[str] = set()


class Lacking(Unsupported):
    """A step needs a GPTQModel name this source tree lacks: the step is skipped, naming it (with the events
    GPTQModel recorded before, as every `unsupported` answer of this subject has them)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, trace=[])


def _qualified(owner: Any, name: str) -> str:
    return f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"


def warn(missing: str, consequence: str) -> None:
    """Say once on stderr that this GPTQModel lacks `missing`, and what the subject does without it."""
    if missing in _warned:
        return
    _warned.add(missing)
    print(f"devsim-subject: warning: this GPTQModel has no {missing}; {consequence}", file=sys.stderr)


def has_module(name: str) -> bool:
    """Whether GPTQModel has the module `name` (its parents are imported to look; a missing parent is no module)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def optional_module(name: str, consequence: str) -> ModuleType | None:
    """The module `name`, or None with a warning where this GPTQModel has none."""
    if not has_module(name):
        warn(name, consequence)
        return None
    return importlib.import_module(name)


def optional(owner: Any, name: str, consequence: str) -> Any:
    """`owner.name`, or None with a warning where this GPTQModel lacks it."""
    if not hasattr(owner, name):
        warn(_qualified(owner, name), consequence)
        return None
    return getattr(owner, name)


def need(owner: Any, name: str, use: str) -> Any:
    """`owner.name` for a step, or `Lacking` naming it where this GPTQModel lacks it (the step is skipped)."""
    if not hasattr(owner, name):
        missing = _qualified(owner, name)
        warn(missing, f"steps that need it ({use}) are skipped")
        raise Lacking(f"this GPTQModel has no {missing}, which the subject's {use} needs")
    return getattr(owner, name)


def constant_lacks(unevaluable: dict[str, tuple[list[str], frozenset[str]]], modules: list[str]) -> str | None:
    """Why a step reading `modules` cannot be observed: an import-time constant one of them holds could not be
    re-evaluated for the host (its constants.toml expression names what this GPTQModel lacks), or None."""
    for constant, (names, holders) in unevaluable.items():
        if holders.intersection(modules):
            return (f"this GPTQModel has no {', '.join(names)}, which constants.toml's expression for {constant} "
                    "needs: the constant keeps the import host's value, so steps that read it are skipped")
    return None
