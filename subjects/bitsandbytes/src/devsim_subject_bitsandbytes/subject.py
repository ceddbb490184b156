"""bitsandbytes' real dispatch code, driven by devsim steps on a simulated host (protocol 2, served by the kit).

bitsandbytes fixes its state when it is imported: it picks its native library (`cextension.lib`) from
`torch.version.hip` / `torch.version.cuda` and the first two fields of that version, probes every device's
compute capability (`cuda_specs`), reads `rocminfo`, and registers its `cuda` kernels only when
`torch.cuda.is_available()`. So the parent process patches torch (the kit's SimulatedTorch) but never imports
bitsandbytes: each scenario's forked child imports it on that scenario's host, inside the first step, so that
what the import queries is that step's trace. A child that imported bitsandbytes is never reused.

The simulated host is assumed to have its GPU runtime installed: a GPU library bitsandbytes ships loads as a
stand-in with the real file's exports and no native code (the kit's NativeLoads); each load is an
`extension_load` event naming the file. `rocminfo` answers from the host (the kit's RocmInfo).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from devsim_subject_kit import (
    Host,
    ProjectState,
    ProtocolError,
    Refused,
    Unsupported,
    action,
)
from devsim_subject_kit.subject import Handler
from devsim_subject_kit.subject import Subject as KitSubject

from . import declare

KERNEL = "bitsandbytes"
# The 4-bit path every backend implements: its registrations say which device types bitsandbytes serves here.
OP = "bitsandbytes::dequantize_4bit"
DISPATCH_KEY = {"cuda": "CUDA", "cpu": "CPU", "xpu": "XPU", "mps": "MPS", "hpu": "HPU"}
EVENTS = ["device_count", "device_name", "nvidia_capability", "smem_optin", "amd_arch", "get_device",
          "set_device", "synchronize", "extension_load"]
OBSERVES = {
    "validate": ["ok", "error", "family", "ordinal", "torch_device", "current_after"],
    "warmup": ["ok", "error", "family", "ordinal", "torch_device", "current_after"],
}
# torch's compiler stack, which bitsandbytes' default backend imports (about 3.6 s of its 3.7 s import): imported
# once in the parent, so that each scenario's child imports only bitsandbytes itself. None of it reads the host.
PREIMPORT = ("torch._dynamo", "torch._inductor.compile_fx", "torch._inductor.compiler_bisector", "functorch.compile")
# A decode-sized GEMM (M, N, K): M = 6 is past the heuristics' tiny-M floor (4), so their per-arch rules decide.
GEMM_SHAPE = (6, 4096, 4096)
WARMUP_NEEDS_GPU = (
    "bitsandbytes admits the device here and would then run its 4-bit kernels in native code, which a simulated "
    "host does not run"
)


class Subject(KitSubject):
    """The adapter: data, hooks on the kit and the actions it registers; the kit's `Subject` runs the steps."""

    project = "bitsandbytes"

    def __init__(self) -> None:
        super().__init__()
        self.name = "bitsandbytes"
        self.state: ProjectState = ProjectState(("bitsandbytes",))
        self.declaration: declare.Declaration | None = None
        self.module: Any = None  # bitsandbytes, once this child imported it

    def load(self, live: bool = False) -> None:
        """Parent: patch torch to a CPU-only build, read bitsandbytes' declaration from its files."""
        from devsim_subject_kit.lowlevel import RocmInfo
        from devsim_subject_kit.nativelibs import NativeLoads
        from devsim_subject_kit.simtorch import SimulatedTorch

        self.torch_host = SimulatedTorch(self.recorder).install(Host())
        self.declaration = declare.read()
        self.version = importlib.metadata.version("bitsandbytes")
        # The CPU library is CPU code: it loads for real. The GPU ones stand in (no GPU runtime here).
        NativeLoads(self.recorder, [self.declaration.package],
                    stand_in=lambda path: path.name != "libbitsandbytes_cpu.so").install()
        RocmInfo(lambda: self.torch_host.host, self.recorder).install()
        for name in PREIMPORT:
            importlib.import_module(name)
        self.state.plan()

    def contract(self) -> dict[str, Any]:
        """The protocol 2 handshake: the one kernel, read from bitsandbytes' files."""
        assert self.declaration is not None
        kernels = [{"name": KERNEL, "families": self.declaration.families, "source": self.declaration.source}]
        # the kit traces each step inside bitsandbytes and names the function behind a refusal or an event
        return self.handshake_answer(kernels, EVENTS, OBSERVES, ["bitsandbytes"])

    # -- per scenario (the kit's `enter` enters the host; bitsandbytes is imported by the first step)

    def reusable(self) -> bool:
        """A child that imported bitsandbytes holds its import-time state: never reused."""
        return self.module is None and self.state.unchanged()

    # -- steps (the kit's `Subject.step` runs them)

    def begin(self, msg: dict[str, Any]) -> None:
        """Every step names the one kernel."""
        if msg.get("kernel") != KERNEL:
            raise ProtocolError(f"a step for kernel {msg.get('kernel')!r}, which this subject does not declare")

    def perform(self, msg: dict[str, Any], handler: Handler, obs: dict[str, Any]) -> None:
        """The action; a call into a stand-in GPU library cannot be observed here."""
        from devsim_subject_kit.nativelibs import SimulatedNativeCall

        try:
            handler(msg, obs)
        except SimulatedNativeCall as exc:
            raise Unsupported(f"bitsandbytes ran native code on the simulated host ({exc})") from exc

    def finish(self, ok: bool, obs: dict[str, Any]) -> None:
        """Every step reports torch's current device after it."""
        self.report_current(obs)

    def device(self, sel: dict[str, Any]) -> Any:
        """The torch device bitsandbytes would get: it addresses devices as torch does, with no family names."""
        import torch

        form = sel["form"]
        try:
            if form == "string":
                return torch.device(str(sel["written"]))
            if form == "ordinal":
                return torch.device(int(sel["written"]))
            if form == "torch_device":
                index = sel.get("index")
                return torch.device(sel["device_type"]) if index is None else torch.device(sel["device_type"], index)
        except (RuntimeError, ValueError) as exc:
            raise Unsupported(
                f"bitsandbytes takes torch devices, and torch does not accept {sel.get('written', sel)!r} as one "
                f"({exc}); the spelling cannot reach bitsandbytes"
            ) from exc
        if form == "family_enum":
            raise Unsupported("bitsandbytes has no device-family enum; a family target cannot reach it")
        raise ProtocolError(f"unknown selector form {form!r}")

    def imported(self) -> Any:
        """bitsandbytes, imported on this child's host the first time a step needs it (its queries recorded)."""
        if self.module is None:
            try:
                self.module = importlib.import_module("bitsandbytes")
            except ImportError as exc:
                raise Refused(f"import bitsandbytes failed on this host: {exc}", None) from exc
        return self.module

    def gate(self, device: Any, obs: dict[str, Any]) -> None:
        """What bitsandbytes would do with a tensor on `device`: dispatch to its kernel for that device type,
        whose native library must be the GPU one for this build."""
        import torch

        self.imported()
        host = self.torch_host.host
        obs["torch_device"] = str(device)
        obs["ordinal"] = device.index
        if device.type == "cuda":
            obs["family"] = "rocm" if host.is_rocm else "cuda" if host.has_gpu_runtime else None
        else:
            obs["family"] = device.type if device.type in ("cpu", "xpu", "mps") else None
        if obs["family"] is None:
            del obs["family"]
        key = DISPATCH_KEY.get(device.type, device.type.upper())
        if not torch._C._dispatch_has_kernel_for_dispatch_key(OP, key):
            raise Refused(
                f"Could not run '{OP}' with arguments from the '{key}' backend: bitsandbytes registered no {key} "
                "kernel on this host (as torch's dispatcher would raise for such a tensor)",
                "unsupported-family",
            )
        if device.type != "cuda":
            return
        from bitsandbytes import cextension

        lib = cextension.lib
        if isinstance(lib, cextension.ErrorHandlerMockBNBNativeLibrary):
            raise Refused(str(lib.error_msg).strip().splitlines()[0], None)
        if not getattr(lib, "compiled_with_cuda", False):
            raise Refused(
                f"bitsandbytes loaded {getattr(getattr(lib, '_lib', None), '_name', 'a CPU library')} on this GPU "
                "build: its cuda kernels would call a library without them",
                None,
            )
        with self.recorder.quiet():
            self.torch_host.landing(device)  # data for an ordinal torch does not have cannot exist

    @action("validate")
    def do_validate(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """Import bitsandbytes on the host (its library choice and probes) and gate the device."""
        device = self.device(msg["device"])
        try:
            self.gate(device, obs)
        except RuntimeError as exc:  # torch's, for an ordinal it does not have (Refused is no RuntimeError)
            raise Refused(str(exc), "no-such-device" if "invalid device ordinal" in str(exc) else None) from exc

    @action("warmup")
    def do_warmup(self, msg: dict[str, Any], obs: dict[str, Any]) -> None:
        """The gate as for validate (a refusal is observed); an admitted device would run native code. The skip
        reason says which path bitsandbytes' own per-device heuristic picks there (fused kernel or
        dequantize+linear), which is Python and runs on the simulated host."""
        self.do_validate(msg, obs)
        raise Unsupported(f"{WARMUP_NEEDS_GPU}; {self.gemm_path(self.device(msg['device']))}")

    def gemm_path(self, device: Any) -> str:
        """What bitsandbytes' `gemm_4bit` dispatch picks on `device` for a decode-sized fp16 GEMM."""
        import torch

        if device.type != "cuda":
            return f"its {device.type} backend has no per-device fused-kernel choice"
        from bitsandbytes.backends.cuda import ops

        index = device.index if device.index is not None else self.torch_host.current()
        with self.recorder.quiet():
            fused = ops._gemm_4bit_use_custom_fn(index, torch.float16, *GEMM_SHAPE)
        m, n, k = GEMM_SHAPE
        heuristic = ops._gemm_4bit_use_custom_fn.__name__
        return (f"for an fp16 {m}x{n}x{k} gemm_4bit on device {index} its {heuristic} picks "
                f"{'the fused kernel' if fused else 'dequantize + F.linear'}")
