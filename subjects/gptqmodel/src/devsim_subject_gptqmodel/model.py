"""The GPTQModel subject's data and plain types: the constants of its contract (families, events, actions, the
fields each action observes), the kernel map's entries and the error rules read from its TOML files, the
exception a live step ends with when a native build is missing (`NeedsBuild`), and which errors are the subject's
own bugs (`raised_by_subject`). A step's other endings are the kit's `Unsupported` and `Refused`."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devsim_subject_kit import ProjectState
from devsim_subject_kit.patches import Patches
from devsim_subject_kit.subject import Subject as KitSubject

if TYPE_CHECKING:
    from .hooks import _MissingPackageFinder

DATA = Path(__file__).parent
FAMILIES = ("cpu", "cuda", "rocm", "xpu", "mps")
# how long a reused child waits for a shut-down device pool's threads to end before it is retired instead
POOL_EXIT_S = 2.0

# The trace events the subject records (the kit's simulated torch plus the hooks below).
EVENTS = [
    "device_count",
    "device_name",
    "nvidia_capability",
    "smem_optin",
    "amd_arch",
    "get_device",
    "set_device",
    "synchronize",
    "extension_load",
    "lock",
]

# What a simulated extension load changes on GPTQModel's TorchOpsJitExtension: the load verdict, and the torch.ops
# caches `namespace_object()` refreshes after it. A scenario's values are put back before the next one.
EXTENSION_STATE = ("_load_attempted", "_load_result", "_last_error", "_namespace_cache", "_op_cache")

# Not `discover`: GPTQModel 7.7.0 has no device-discovery function that reports a vendor and per-GPU archs
# (gptqmodel.utils.torch.torch_devices() lists torch devices only, and device-smi, its hardware inventory, reads
# the real machine), so a scenario that discovers is not applicable to it, as one naming a kernel it lacks is.
# The error kinds that are a kernel's refusal of the device when its own code raises them on the way to or in its
# forward (a wrapper has no other gate); any other error there is a limit of the simulated warmup.
REFUSALS = ("unsupported-family", "unsupported-arch", "unsupported-bits")

# Protocol v2: the observation fields each action really reports (`current_after`: on every GPU build with a
# visible GPU). normalize reports no ordinal: GPTQModel's normalize_device returns a family enum.
OBSERVES: dict[str, tuple[str, ...]] = {
    "normalize": ("ok", "error", "family", "current_after"),
    "resolve": ("ok", "error", "family", "ordinal", "torch_device", "current_after"),
    "validate": ("ok", "error", "family", "ordinal", "torch_device", "current_after"),
    "select": ("ok", "error", "selected", "family", "ordinal", "torch_device", "current_after"),
    "lock": ("ok", "error", "covers", "current_after"),
    "move": ("ok", "error", "family", "ordinal", "torch_device", "lands_on", "current_after"),
    "set_device": ("ok", "error", "current_after"),
    # simulated: GPTQModel's forward on fake or CPU-backed tensors (fakewarmup.py) gives ran_on; retained_bytes is
    # live only
    "warmup": ("ok", "error", "ran_on", "current_after", "retained_bytes"),
    # importer.auto_select_device returns a family enum: no ordinal or torch device
    "default_device": ("ok", "error", "family", "current_after"),
}


# GPTQModel DEVICE values -> devsim families. DEVICE.NPU (Ascend) has no devsim family and is left out of a
# declaration (the kernels that list it: the portable torch kernels, which also declare ALL or CPU/CUDA).
DEVSIM_FAMILIES = {"cuda": "cuda", "rocm": "rocm", "cpu": "cpu", "xpu": "xpu", "mps": "mps", "all": "all"}


def declared_families(cls: Any) -> list[str]:
    """The class's SUPPORTS_DEVICES as devsim families, in GPTQModel's order; a class without the attribute
    (7.7.0's EXL3 and FP4 wrappers) declares none."""
    families: list[str] = []
    for device in getattr(cls, "SUPPORTS_DEVICES", None) or []:
        family = DEVSIM_FAMILIES.get(str(getattr(device, "value", device)).lower())
        if family is not None and family not in families:
            families.append(family)
    return families



# Simulated, a warmup is observed at GPTQModel's gate (a refusal is its decision, made before any device work)
# and, admitted, through its forward on fake or CPU-backed tensors (fakewarmup.py); this is the reason when
# neither can run it.
WARMUP_NEEDS_GPU = (
    "GPTQModel 7.7.0 admits the kernel here, and its warmup could not be simulated on torch's fake tensors nor on "
    "CPU-backed ones (devsim run --live --subject runs it on a real GPU)"
)


@dataclass
class Kernel:
    name: str
    module: str
    cls_name: str
    bits: int = 4
    # the bits a simulated warmup builds the module with: `bits`, unless validate's width names no format the
    # module implements (GGUF Triton fuses only K-quants: "q4_k_m")
    module_bits: int | str = 4
    validate: dict = field(default_factory=dict)
    requires: list = field(default_factory=list)
    weights: str | None = None  # the checkpoint format the subject builds packed weights in (kernels.toml)
    # how the kernel declares it rounds its activations before the matmul (kernels.toml `activations`), which the
    # live oracle models (livewarmup.ACTIVATIONS); None: it takes them as given
    activations: str | None = None
    cls: Any = None
    missing: list = field(default_factory=list)  # of `requires`, the packages this environment lacks
    missing_at_import: list = field(default_factory=list)  # of `missing`, those its module tried to import
    # installed packages built without a library the verdict needs (kernels.toml `requires_library`): every verdict
    # rests on how the package was built, which a simulated host cannot change
    build_lacks: list = field(default_factory=list)
    # Whether the class carries GPTQModel's quant-linear contract (BaseQuantLinear: SUPPORTS_*, validate,
    # validate_device). The EXL3 and FP4 wrappers of 7.7.0 are plain nn.Modules without one.
    contract: bool = True


@dataclass
class Rule:
    kind: str
    match: re.Pattern
    type: str | None = None

    def matches(self, message: str, exc: BaseException | None) -> bool:
        if self.type is not None and (exc is None or self.type not in {c.__name__ for c in type(exc).__mro__}):
            return False
        return bool(self.match.search(message))


def load_toml(name: str) -> dict:
    with open(DATA / name, "rb") as handle:
        return tomllib.load(handle)


class NeedsBuild(BaseException):
    """Live: a native extension GPTQModel needs is not built here (JIT builds off) or its build failed on this
    machine. A BaseException, so GPTQModel's own `except Exception` fallbacks cannot turn it into a refusal it never
    made; the step answers `unsupported` with the reason (and no trace)."""


# Modules of this package that stand in for the code under test: an exception raised in them is an observation.
# seedfix.py and seedfix2.py are the overlays, written in place of GPTQModel functions (their errors are
# GPTQModel's, as the seed's code would raise them). The kit's simulated torch lives outside this package: its torch-like errors are torch's.
STAND_INS = ("seedfix.py", "seedfix2.py")


def raised_by_subject(exc: BaseException) -> bool:
    """Whether the innermost frame of `exc` is the subject's own step code (not GPTQModel, torch, the simulated
    runtime or the overlay, whose errors are observations)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    if last is None:
        return False
    path = Path(last).resolve()
    return path.parent == DATA and path.name not in STAND_INS


class SubjectBase(KitSubject):
    """The attributes `Subject.__init__` (and `load`, `begin`) set, declared once for the mixins that make up
    `Subject` (hooks.py, actions.py, warmups.py): each mixin uses them, none sets them up. The kit's `Subject`
    (below them) runs the steps and holds `recorder`, `torch_host`, `live`, `name` and `version`."""

    project = "GPTQModel"

    kernels: dict[str, Kernel]
    methods: dict[str, dict]
    rules: list[Rule]
    constants: list[dict]
    version: str
    pool: Any
    _lock_keys: dict[int, str]
    _held: list[str]
    _device_errors: list[BaseException]
    _families: list[tuple[Any, Any, dict[str, Any] | None]]
    _selectors: list[Any]
    overlay: str | None
    _loaded: dict[int, tuple[Any, tuple[Any, ...]]]
    state: ProjectState
    patches: Patches  # the hooks on GPTQModel (hooks.py), installed once by `load`
    _missing: _MissingPackageFinder
    _native_ops: list[Any]
    _dependent: set[tuple[str, str]]
    _checkpoints: dict[tuple[str, int], tuple[Any, dict] | Exception]
    tolerances: dict[str, dict[str, Any]]
    tolerance_note: str
    _undecided: dict[str, str]
    _repeat: int  # how many times the step runs (live: `repeat`)
    _before: int | None  # live: the device bytes allocated before the step
    boundary_name: str
    boundary_fn: Callable[..., Any] | None
