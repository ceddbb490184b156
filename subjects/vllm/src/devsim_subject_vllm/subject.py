"""vLLM's real platform detection and linear-kernel selection, driven by devsim steps (protocol 2, on the kit).

vLLM does not ask torch which GPUs it runs on. It picks its platform through the vendors' management libraries
(NVML through its vendored `vllm.third_party.pynvml`, AMD's `amdsmi`), reads the ROCm arch once when
`vllm.platforms.rocm` is imported, and binds `current_platform` by name in the modules that use it. So the
parent process simulates a CPU-only host (the kit's SimulatedTorch, plus the kit's NVML and amdsmi fakes),
imports vLLM's selection code on vLLM's CPU platform, and never imports a GPU platform module. Each scenario's
forked child resolves vLLM's platform afresh on that scenario's host, inside the first step (so what the
detection queries is that step's trace), imports `vllm.platforms.cuda` or `.rocm` there for the first time,
and rebinds the new `current_platform` wherever the old one was bound. A child that resolved a platform is
never reused.

vLLM's CUDA platform module loads native code that links `libcuda.so.1`: the subject preloads devsim's own
fake driver under that name (`DEVSIM_FAKE_LIBCUDA`, built by `scripts/build-fake-drivers`); no kernel runs.

Actions, each through vLLM's own code:
- `discover`: the platform vLLM detects (vendor), `current_platform.device_count()`, and the arch vLLM acts on
  for each ordinal (`get_device_capability(i)`; on ROCm, the `_GCN_ARCH` that capability comes from).
- `select`: `choose_mp_linear_kernel` for the method and bits, with the target made the current device first,
  as vLLM's workers do (`torch.accelerator.set_device_index(local_rank)`): vLLM's selection takes no device.
- `validate`: the same `choose_mp_linear_kernel` with every other kernel turned off through vLLM's own
  `VLLM_DISABLED_KERNELS`: vLLM either returns the kernel or says why it cannot run it.
- `resolve`: `DeviceConfig(device=...)`, vLLM's device configuration, with a device string torch accepts or a
  `torch.device` (its typed API: no ordinals, no family enums); the device it keeps is the boundary.
- `set_device`: `current_platform.set_device(torch.device("cuda", n))`.
"""

from __future__ import annotations

import collections.abc
import ctypes
import importlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path
from typing import Any

from devsim_subject_kit import Host, ProtocolError, Refused, Unsupported, action, blame
from devsim_subject_kit.subject import Handler
from devsim_subject_kit.subject import Subject as KitSubject

from . import declare
from .bindings import (
    PlatformBindings,
    PreloadedCode,
    memoise_metadata,
    preload_source_lines,
)

EVENTS = ["device_count", "device_name", "nvidia_capability", "amd_arch", "get_device", "set_device"]
OBSERVES = {
    "discover": ["ok", "error", "vendor", "archs", "torch_device_count"],
    "select": ["ok", "error", "family", "selected"],
    "validate": ["ok", "error", "family"],
    "set_device": ["ok", "error", "current_after"],
    "resolve": ["ok", "error", "family", "ordinal", "torch_device"],
}
# The heavy libraries vLLM's selection code imports; none reads the host. vLLM itself is imported after them.
SELECTION = "vllm.model_executor.kernels.linear"
# vLLM's op libraries that vllm.platforms.cuda imports first: its own (also imported by .rocm; about 120 ms: a 90 MB
# extension linked against libtorch and libcuda.so.1) and, optionally, QuTLASS's (about 2.5 ms and 430 page faults in
# each CUDA child). Loading one registers torch ops and reads nothing of the simulated host (that lives in Python;
# below, every host has the same fake driver), so the parent loads them once for every child, in the order the
# module imports them, after vllm._custom_ops looked for their ops (as it did before either was loaded). The CPU
# platform's steps never consult them: its mixed-precision kernels use aten and zentorch ops only.
NATIVE_OPS = ("vllm._C_stable_libtorch", "vllm._qutlass_C")
# The GPU platform modules: each reads the host when it runs, so only a child imports one (its bytecode is read here).
GPU_PLATFORMS = ("vllm.platforms.cuda", "vllm.platforms.rocm")
# The modules on the stack vLLM formats when it resolves its platform in a child (`_init_trace`).
STACK_MODULES = ["__main__", "runpy", "devsim_subject_kit.server", "devsim_subject_kit.subject", __name__, "vllm.platforms"]
FAMILY_OF_PLATFORM = {"CudaPlatform": "cuda", "NvmlCudaPlatform": "cuda", "NonNvmlCudaPlatform": "cuda",
                      "RocmPlatform": "rocm", "CpuPlatform": "cpu", "XPUPlatform": "xpu"}
VENDOR_OF_FAMILY = {"cuda": "nvidia", "rocm": "amd", "cpu": "none"}


class NoPlatform(Refused):
    """vLLM could not pick a platform on this host: discover observes it; other steps cannot run at all."""


def stable(text: str) -> str:
    """`text` with each list of quoted names sorted: vLLM lists activated plugins in set order, which varies
    from process to process, and a skip reason must not."""
    return re.sub(r"\[('[^'\]]*'(?:, '[^'\]]*')*)\]",
                  lambda m: "[" + ", ".join(sorted(m.group(1).split(", "))) + "]", text)


def torch_device_of(sel: dict[str, Any]) -> Any:
    """The `torch.device` a `string` or `torch_device` selector names; a spelling torch refuses cannot reach
    vLLM, which takes torch devices, so the step is unsupported."""
    import torch

    try:
        if sel["form"] == "string":
            return torch.device(str(sel["written"]))
        index = sel.get("index")
        return torch.device(sel["device_type"]) if index is None else torch.device(sel["device_type"], int(index))
    except (RuntimeError, ValueError, TypeError) as exc:
        raise Unsupported(f"torch does not accept {sel.get('written', sel)!r} as a device ({exc}); vLLM "
                              "takes torch devices") from exc


def fake_libcuda() -> Path:
    """devsim's fake `libcuda.so.1` (`DEVSIM_FAKE_LIBCUDA`, else the repository's target/fake-drivers)."""
    named = os.environ.get("DEVSIM_FAKE_LIBCUDA")
    if named:
        return Path(named).resolve()
    return Path(__file__).resolve().parents[4] / "target" / "fake-drivers" / "cuda" / "libcuda.so.1"


class Subject(KitSubject):
    """The adapter: data (the kernel map in `declare`), hooks on the kit and the actions it registers; the kit's
    `Subject` runs the steps."""

    project = "vLLM"

    def __init__(self) -> None:
        super().__init__()
        self.name = "vllm"
        self.declaration: declare.Declaration | None = None
        self.platform: Any = None  # vLLM's platform on this child's host, once resolved
        self.platform_error: Exception | None = None
        self.selection: Any = None
        self.bindings: PlatformBindings | None = None  # the parent's modules that bind its platform

    def load(self, live: bool = False) -> None:
        """Parent: simulate a CPU-only host below and above torch, import vLLM's selection code on its CPU
        platform, and read the kernel declaration from it."""
        if live:
            # No live mode: nothing is patched, the declaration is read on vLLM's CPU platform (no GPU module,
            # no driver), and the handshake does not say `live`, so devsim refuses the run before any scenario.
            from devsim_subject_kit.livetorch import LiveTorch

            self.torch_host = LiveTorch(self.recorder)  # the real torch, never patched (nothing is installed)
            os.environ["VLLM_TARGET_DEVICE"] = "cpu"
            self.selection = importlib.import_module(SELECTION)
            self.declaration = declare.read(self.selection)
            self.version = importlib.metadata.version("vllm")
            return
        from devsim_subject_kit.lowlevel import Amdsmi, Nvml
        from devsim_subject_kit.simtorch import SimulatedTorch

        library = fake_libcuda()
        if not library.is_file():
            raise ProtocolError(
                f"vLLM's CUDA platform module links libcuda.so.1, and devsim's fake driver is not at {library} "
                "(run scripts/build-fake-drivers, or set DEVSIM_FAKE_LIBCUDA)"
            )
        ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)  # satisfies NEEDED libcuda.so.1 by its soname
        self.torch_host = SimulatedTorch(self.recorder).install(Host())
        Amdsmi(lambda: self.torch_host.host, self.recorder).install()
        pynvml = importlib.import_module("vllm.third_party.pynvml")
        Nvml(lambda: self.torch_host.host, self.recorder).install(pynvml)
        os.environ["VLLM_TARGET_DEVICE"] = "cpu"  # the parent's platform: vLLM's CPU one, never a GPU one
        self.selection = importlib.import_module(SELECTION)
        self.declaration = declare.read(self.selection)
        self.version = importlib.metadata.version("vllm")
        for gpu_module in GPU_PLATFORMS:
            if gpu_module in sys.modules:
                raise ProtocolError(f"{gpu_module} was imported on the parent's CPU host; it fixes state at import")
        for native in NATIVE_OPS:
            try:  # see NATIVE_OPS: the same load each GPU child made first thing, made once
                importlib.import_module(native)
            except ImportError:
                pass  # not cached: each child that imports it meets the same failure, as before
        memoise_metadata()
        # vllm.platforms.rocm logs the failed import of its ROCm op library with the exception as the only argument,
        # and logging asks whether that argument is a Mapping. Asked first in a child, the ABC check walks every
        # registered Mapping class (about 100) and writes each one's negative cache: about 650 copy-on-write faults
        # and 2 to 3 ms in every ROCm child. Asked here, every child finds the answer (no) cached.
        isinstance(ModuleNotFoundError(), collections.abc.Mapping)
        PreloadedCode(list(GPU_PLATFORMS)).install()  # compiled here, run in each child that imports one
        preload_source_lines(STACK_MODULES)
        from vllm import platforms

        self.bindings = PlatformBindings(platforms._current_platform)

    def contract(self) -> dict[str, Any]:
        """The protocol 2 handshake: the kernels read from vLLM's selection code."""
        assert self.declaration is not None
        # the kit traces each step inside vLLM and says which of its functions decided what (decided_by)
        return self.handshake_answer(self.declaration.handshake_kernels(), EVENTS, OBSERVES, ["vllm"])

    # -- per scenario

    def entered(self, host: Host) -> None:
        """Child: the host is entered (vLLM's platform is resolved by the first step)."""
        if host.torch == "cpu":
            os.environ["VLLM_TARGET_DEVICE"] = "cpu"  # how vLLM is told it runs on a CPU
        else:
            os.environ.pop("VLLM_TARGET_DEVICE", None)

    def reusable(self) -> bool:
        """A child that resolved vLLM's platform holds that host's import-time state: never reused."""
        return self.platform is None and self.platform_error is None

    # -- vLLM's platform on this host

    def resolved(self) -> Any:
        """vLLM's `current_platform` for this child's host, resolved the first time a step needs it."""
        if self.platform is None and self.platform_error is None:
            from vllm import platforms

            old = platforms._current_platform
            platforms._current_platform = None
            try:
                self.platform = platforms.current_platform
            except Exception as exc:  # noqa: BLE001 - vLLM's own refusal to pick a platform: the observation
                self.platform_error = exc
            else:
                holders = self.bindings.holders(old) if self.bindings is not None else PlatformBindings.scan(old)
                for module in holders:
                    module.current_platform = self.platform
        if self.platform_error is not None:
            error = self.platform_error
            raise NoPlatform(f"vLLM picks no platform on this host: {type(error).__name__}: {stable(str(error))}",
                             None)
        return self.platform

    def family(self) -> str | None:
        """The devsim family of vLLM's platform (None for one devsim has no family for)."""
        return FAMILY_OF_PLATFORM.get(type(self.resolved()).__name__)

    # -- steps

    def perform(self, msg: dict[str, Any], handler: Handler, obs: dict[str, Any]) -> None:
        """The action; without a platform only discover observes vLLM (its refusal to pick one)."""
        try:
            handler(msg, obs)
        except NoPlatform as exc:
            if msg["action"] != "discover":  # nothing of vLLM's selection runs without a platform
                raise Unsupported(str(exc)) from exc
            raise

    @action("discover")
    def do_discover(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """What vLLM detects: its platform, its device count and the arch it acts on for each device."""
        platform = self.resolved()
        family = self.family()
        obs["vendor"] = VENDOR_OF_FAMILY.get(family or "", "none")
        # the vendor is the platform vLLM's detection picked by counting devices through the vendors' libraries:
        # placed where this step's first count was queried (nothing when an earlier step resolved it)
        blame.observed_event("vendor", "device_count")
        if family not in ("cuda", "rocm"):
            return
        try:
            count = int(platform.device_count())
            obs["torch_device_count"] = count
            obs["archs"] = [self.arch_of(platform, i) for i in range(count)]
            # each arch is what vLLM read through its capability query: placed where it queried
            blame.observed_event("archs", "amd_arch" if family == "rocm" else "nvidia_capability")
        except Exception as exc:  # vLLM's own error while it looks at this host's devices: the observation
            raise Refused(f"vLLM raised {type(exc).__name__}: {exc}", None) from exc

    def arch_of(self, platform: Any, ordinal: int) -> str:
        """The arch vLLM acts on for `ordinal`, in devsim's spelling. CUDA: `sm_XY` from its capability. ROCm:
        the `_GCN_ARCH` its capability is derived from, which has no target features; when it is the visible
        GPU's own arch up to those features, the GPU's full arch is given (vLLM does not model features)."""
        cap = platform.get_device_capability(ordinal)
        if cap is None:
            return "unknown"
        if self.family() == "cuda":
            return f"sm_{cap.major}{cap.minor}"
        rocm = sys.modules["vllm.platforms.rocm"]
        arch = str(rocm._GCN_ARCH)
        if rocm._capability_from_gcn_arch(arch) != (cap.major, cap.minor):
            arch = f"gfx{cap.major}{cap.minor}?"
        gpus = self.torch_host.host.visible_gpus()
        if ordinal < len(gpus) and gpus[ordinal].base_arch == arch:
            return gpus[ordinal].arch
        return arch

    def target(self, sel: dict[str, Any]) -> int | None:
        """The ordinal a selector names on vLLM's GPU platform (None: the current device)."""
        form = sel["form"]
        family = self.family()
        if form == "family_enum":
            # vLLM's GPU platforms are torch's `cuda` namespace: DEVICE.CUDA on a HIP build is that platform.
            if sel["family"] != family and not (sel["family"] == "cuda" and family == "rocm"):
                raise Unsupported(f"vLLM runs on its one detected platform ({family}); a {sel['family']} "
                                      "target cannot be expressed to its selection")
            return None
        if form == "ordinal":
            return int(sel["written"])
        device = torch_device_of(sel)
        if device.type == "cpu" and family == "cpu":
            return None
        if device.type != "cuda" or family not in ("cuda", "rocm"):
            raise Unsupported(f"vLLM selects kernels for its detected platform ({family}); a {device.type} "
                                  "target cannot be expressed to its selection")
        return device.index

    def on_target(self, sel: dict[str, Any], call: Any) -> Any:
        """Run `call` with the target as the current device (as vLLM's worker sets it), then restore."""
        self.resolved()
        ordinal = self.target(sel)
        if ordinal is None:
            return call()
        host = self.torch_host
        if not 0 <= ordinal < host.count():
            raise Unsupported(f"ordinal {ordinal} is not a device here; vLLM's worker could not be placed on it")
        before = host.current()
        with self.recorder.quiet():
            host.set_device(ordinal)
        try:
            return call()
        finally:
            with self.recorder.quiet():
                host.set_device(before)

    def choose(self, config: Any, disabled: list[str]) -> Any:
        """vLLM's `choose_mp_linear_kernel`, with `disabled` kernels turned off by `VLLM_DISABLED_KERNELS`."""
        saved = os.environ.get("VLLM_DISABLED_KERNELS")
        os.environ["VLLM_DISABLED_KERNELS"] = ",".join(disabled)
        try:
            return self.selection.choose_mp_linear_kernel(config)
        except ValueError as exc:
            raise Refused(str(exc), None) from exc
        finally:
            if saved is None:
                os.environ.pop("VLLM_DISABLED_KERNELS", None)
            else:
                os.environ["VLLM_DISABLED_KERNELS"] = saved

    @action("select")
    def do_select(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """vLLM's mixed-precision kernel selection for the method and bits, on the target device."""
        assert self.declaration is not None
        config = self.declaration.config(self.selection, msg["method"], int(msg["bits"]))
        self.resolved()
        family = self.family()
        if family is not None:
            obs["family"] = family
        chosen = self.on_target(msg["device"], lambda: self.choose(config, []))
        name = self.declaration.devsim_name(chosen.__name__, msg["method"])
        if name is not None:
            obs["selected"] = name
            blame.observed("selected", chosen)  # the class vLLM's selection returned

    @action("validate")
    def do_validate(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """Whether vLLM's selection would run this one kernel on the target device."""
        assert self.declaration is not None
        kernel = self.declaration.kernel(msg["kernel"])
        if kernel is None:
            raise ProtocolError(f"a step for kernel {msg.get('kernel')!r}, which this subject does not declare")
        config = self.declaration.config(self.selection, kernel.method, 4)
        self.resolved()
        family = self.family()
        if family is not None:
            obs["family"] = family
        listed = self.declaration.platform_kernels(self.selection, self.platform)
        others = [name for name in self.declaration.all_classes(self.selection) if name != kernel.vllm_class]
        try:
            chosen = self.on_target(msg["device"], lambda: self.choose(config, others))
        except Refused as exc:
            text = str(exc)
            if kernel.vllm_class not in listed:  # choose_mp_linear_kernel never considers it on this platform
                raise Refused(f"{kernel.vllm_class} is not a {type(self.platform).__name__} kernel: {text}",
                              "unsupported-family") from exc
            raise Refused(text, "unsupported-arch" if "requires capability" in text else None) from exc
        if chosen.__name__ != kernel.vllm_class:
            raise ProtocolError(f"VLLM_DISABLED_KERNELS left {chosen.__name__} in, asked for {kernel.vllm_class}")
        blame.observed("ok", chosen)  # the admission is vLLM's selection returning the kernel

    @action("resolve")
    def do_resolve(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """vLLM's `DeviceConfig` for the selector: the device it keeps for execution."""
        import torch
        from vllm.config.device import DeviceConfig

        sel = msg["device"]
        form = sel["form"]
        if form not in ("string", "torch_device"):
            raise Unsupported(f"vLLM's DeviceConfig takes a device-type string or a torch.device, not a selector of form {form!r} "
                                  "(an ordinal or a family enum)")
        parsed = torch_device_of(sel)  # a string torch refuses never reaches vLLM's execution
        # DeviceConfig is given what the user would write: the string itself, or the torch.device.
        device: Any = str(sel["written"]) if form == "string" else parsed
        platform = self.resolved()
        try:
            config = DeviceConfig(device=device)
        except Exception as exc:
            raise Refused(f"vLLM's DeviceConfig raised {type(exc).__name__}: {exc}", None) from exc
        kept = config.device
        kind = config.device_type.split(":", 1)[0]
        family = self.family() if kind == platform.device_type else {"cpu": "cpu", "xpu": "xpu"}.get(kind)
        if family is not None:
            obs["family"] = family
        if isinstance(kept, torch.device):
            obs["torch_device"] = str(kept)
            obs["ordinal"] = kept.index

    @action("set_device")
    def do_set_device(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """vLLM's `current_platform.set_device` (what its workers call), then torch's current device."""
        import torch

        platform = self.resolved()
        if self.family() not in ("cuda", "rocm"):
            raise Unsupported(f"vLLM's {type(platform).__name__} has no GPUs to make current")
        try:
            platform.set_device(torch.device("cuda", int(msg["ordinal"])))
        except (RuntimeError, AssertionError, ValueError) as exc:
            raise Refused(str(exc), "no-such-device" if "invalid device ordinal" in str(exc) else None) from exc
        obs["current_after"] = self.torch_host.current()
