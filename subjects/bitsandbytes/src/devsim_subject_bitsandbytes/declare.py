"""bitsandbytes' declared contract, read from its own files without importing it (its import fixes state).

- The device types it registers kernels for: every `register_kernel("bitsandbytes::<op>", "<device>")` call in
  `bitsandbytes/backends/**.py`, found by walking their syntax trees.
- The GPU runtimes it ships native libraries for: `libbitsandbytes_cuda*.so` (NVIDIA) and
  `libbitsandbytes_rocm*.so` (AMD: its `cuda` backend serves HIP builds through torch's `cuda` namespace).
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

# torch device types -> devsim families; `default` (CompositeExplicitAutograd) and `hpu` have none.
FAMILY_OF_DEVICE_TYPE = {"cpu": "cpu", "xpu": "xpu", "mps": "mps"}


@dataclass(frozen=True)
class Declaration:
    """What bitsandbytes says it supports, and where that was read."""

    package: Path
    device_types: frozenset[str]
    libraries: tuple[str, ...]

    @property
    def families(self) -> list[str]:
        """devsim families: each registered device type, `cuda` split by the native libraries shipped."""
        families = {FAMILY_OF_DEVICE_TYPE[t] for t in self.device_types if t in FAMILY_OF_DEVICE_TYPE}
        if "cuda" in self.device_types:
            if any(name.startswith("libbitsandbytes_cuda") for name in self.libraries):
                families.add("cuda")
            if any(name.startswith("libbitsandbytes_rocm") for name in self.libraries):
                families.add("rocm")
        return sorted(families)

    @property
    def source(self) -> str:
        """Where the declaration was read (the handshake's `source`)."""
        return "bitsandbytes.backends (register_kernel device types) + libbitsandbytes_*.so shipped in the wheel"


def package_dir() -> Path:
    """bitsandbytes' installed folder, found without importing it."""
    spec = importlib.util.find_spec("bitsandbytes")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bitsandbytes is not installed: run subjects/bitsandbytes/install.sh")
    return Path(next(iter(spec.submodule_search_locations)))


def registered_device_types(backends: Path) -> frozenset[str]:
    """The device-type argument of every `register_kernel("bitsandbytes::...", "<device>")` call."""
    found: set[str] = set()
    for path in sorted(backends.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            op, device = node.args[0], node.args[1]
            if (name == "register_kernel" and isinstance(op, ast.Constant) and str(op.value).startswith("bitsandbytes::")
                    and isinstance(device, ast.Constant) and isinstance(device.value, str)):
                found.add(device.value)
    return frozenset(found)


def read() -> Declaration:
    """The declaration of the installed bitsandbytes."""
    package = package_dir()
    return Declaration(
        package=package,
        device_types=registered_device_types(package / "backends"),
        libraries=tuple(sorted(p.name for p in package.glob("libbitsandbytes_*.so"))),
    )
