"""GPTQModel's real dispatch code, driven by devsim steps on a simulated host.

`Subject.load()` runs once in the parent process: it patches torch (the kit's SimulatedTorch), imports GPTQModel and loads
the data files (kernels.toml, errors.toml, constants.toml). `Subject.enter(host)` runs in the forked child of
each scenario: it switches the simulated host, re-sets GPTQModel's import-time constants and clears its
caches. The kit's `Subject.step(message)` performs one registered action and returns the `observed` (or
`unsupported`) message; the hooks here (`begin`, `perform`, `refusal`, `observed_error`, `finish`) add what
GPTQModel's steps share.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

from devsim_subject_kit import (
    Constant,
    Host,
    ProjectState,
    ProtocolError,
    Refused,
    Reset,
    Unsupported,
)
from devsim_subject_kit.patches import Patches
from devsim_subject_kit.subject import Handler

from . import compat
from .actions import ActionsMixin
from .hooks import (
    HooksMixin,
    _ExtensionImportFinder,
    _MissingPackageFinder,
    _package_has_library,
)
from .model import (
    EVENTS,
    EXTENSION_STATE,
    OBSERVES,
    POOL_EXIT_S,
    Kernel,
    NeedsBuild,
    Rule,
    declared_families,
    load_toml,
    raised_by_subject,
)
from .warmups import WarmupsMixin


class Subject(HooksMixin, WarmupsMixin, ActionsMixin):
    """The GPTQModel subject: loading and the per-scenario life here; its hooks (hooks.py), its actions
    (actions.py) and its warmup (warmups.py) in the mixins."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels: dict[str, Kernel] = {}
        self.methods: dict[str, dict] = {}
        self.rules: list[Rule] = []
        self.constants: list[dict] = []
        self.pool: Any = None
        self._lock_keys: dict[int, str] = {}
        self._held: list[str] = []  # pool keys whose locks the current step took
        self._device_errors: list[BaseException] = []
        # (selector device, family, where it was decided) seen by importer._device_family
        self._families: list[tuple[Any, Any, dict[str, Any] | None]] = []
        self._selectors: list[Any] = []  # what importer._as_selector_device made of a public device value
        self.name = "gptqmodel"
        self.overlay: str | None = None
        # extensions the simulated loader marked loaded in this scenario, with what they held before
        self._loaded: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        self.state = ProjectState(("gptqmodel",))
        self.patches = Patches()  # the hooks on GPTQModel (hooks.py)
        self._missing = _MissingPackageFinder(set())
        self._native_ops: list[Any] = []  # nativeops.Registered by this scenario's extension loads
        self._dependent: set[tuple[str, str]] = set()  # (kernel, missing package) a verdict was seen to need
        # (format, bits) -> the checkpoint a warmup loads (the weights the oracle uses and the saved state), packed
        # once by the parent at load (liveformats), or why it could not be packed
        self._checkpoints: dict[tuple[str, int], tuple[Any, dict] | Exception] = {}
        # per devsim kernel name and dtype, the tolerance GPTQModel's own kernel tests state (`tolerances`)
        self.tolerances: dict[str, dict[str, Any]] = {}
        self.tolerance_note = "GPTQModel's kernel tests were not read"

    # ------------------------------------------------------------------------------------------- loading

    def load(self, import_host: Host | None = None, live: bool = False) -> None:
        """Parent process: patch torch, import GPTQModel, resolve the kernel map.

        GPTQModel is imported on `import_host` (default: a CPU-only build); children re-set the import-time
        constants for their own host. The constants test imports on each host instead, to compare. `live`: the
        real torch instead, its device calls wrapped to record events (the kit's LiveTorch), GPTQModel's constants as it
        computes them on this machine, its native extensions loaded for real.
        """
        self.live = live
        if live:
            import torch
            from devsim_subject_kit.livetorch import LiveTorch

            # torch.compile (GPTQModel's torch kernels compile their dequantization) costs tens of seconds per
            # shape, more than a step may take; eager execution computes the same result.
            # DEVSIM_GPTQMODEL_COMPILE=1 keeps it.
            if os.environ.get("DEVSIM_GPTQMODEL_COMPILE") != "1":
                torch._dynamo.config.disable = True
            self.torch_host = LiveTorch(self.recorder).install()
        else:
            from devsim_subject_kit.simtorch import SimulatedTorch

            self.torch_host = SimulatedTorch(self.recorder).install(import_host or Host())
        data = load_toml("kernels.toml")
        required = {pkg for entry in data["kernel"].values() for pkg in entry.get("requires", [])}
        self._missing = _MissingPackageFinder({pkg for pkg in required if importlib.util.find_spec(pkg) is None})
        sys.meta_path.insert(0, self._missing)
        import gptqmodel
        import gptqmodel.utils.importer
        import torch
        from gptqmodel.version import __version__

        self.version = __version__
        self.methods = data.get("method", {})
        for name, entry in data["kernel"].items():
            kernel = Kernel(
                name=name,
                module=entry["module"],
                cls_name=entry["class"],
                bits=entry.get("bits", 4),
                module_bits=entry.get("module_bits", entry.get("bits", 4)),
                validate=dict(entry.get("validate", {})),
                requires=list(entry.get("requires", [])),
                weights=entry.get("weights"),
                activations=entry.get("activations"),
            )
            kernel.missing = [pkg for pkg in kernel.requires if pkg in self._missing.missing]
            kernel.build_lacks = [
                f"{pkg} built with {library}"
                for pkg, library in dict(entry.get("requires_library", {})).items()
                if pkg not in self._missing.missing and not _package_has_library(pkg, library)
            ]
            try:
                kernel.cls = getattr(importlib.import_module(kernel.module), kernel.cls_name)
            except (ImportError, AttributeError) as exc:
                print(f"devsim-subject: kernel {name}: {kernel.module}.{kernel.cls_name} not importable: {exc}",
                      file=sys.stderr)
                continue
            self.kernels[name] = kernel
        for kernel in self.kernels.values():
            kernel.missing_at_import = sorted(set(kernel.missing) & self._missing.tried_at_import(kernel.module))
        tables = load_toml("constants.toml")
        self._preload(tables.get("preload", []))
        self._pack_checkpoints()
        self._read_tolerances(Path(gptqmodel.__file__).resolve().parent)
        # The seed-fix overlay (seedfix.py) replaces GPTQModel functions before any hook below wraps them, so the
        # subject observes the overlay exactly as it observes GPTQModel.
        # Imported here, before any child is forked: a module first imported in a child changes sys.modules,
        # and that child could not be reused.
        from . import fakewarmup, livewarmup, nativeops, seedfix  # noqa: F401

        if not live:
            fakewarmup.prime()
            nativeops.prime()

        overlay = seedfix.variant()
        if overlay is not None:
            seedfix.apply()
            self.overlay = overlay
            self.name = f"gptqmodel-{overlay}"
            self.version = f"{self.version}+{overlay}"
            without = seedfix.reverted()
            if without is not None:
                self.version = f"{self.version}-without-{without}"
        for kernel in self.kernels.values():
            kernel.contract = callable(getattr(kernel.cls, "validate", None))
        self.boundary_name, self.boundary_fn = "DEVICE.to_torch_device", None
        for candidate in data.get("boundary", {}).get("candidates", []):
            module_name, func_name = candidate.split(":")
            try:
                func = getattr(importlib.import_module(module_name), func_name, None)
            except ImportError:
                continue
            if func is not None:
                self.boundary_name, self.boundary_fn = candidate, func
                break
        sys.meta_path.insert(0, _ExtensionImportFinder(data.get("extension", {}).get("modules", []), self.recorder))
        self.rules = [
            Rule(kind=r["kind"], match=re.compile(r["match"]), type=r.get("type"))
            for r in load_toml("errors.toml")["rule"]
        ]
        self.state = ProjectState(
            ("gptqmodel",),
            [Constant.from_table(c) for c in tables["constant"]],
            [Reset.from_table(r) for r in tables.get("reset", [])],
        )
        self._install_hooks()
        self.state.plan()
        for warning in self.state.warnings:
            print(f"devsim-subject: constants.toml: {warning}", file=sys.stderr)

    def handshake(self, protocol: int = 1) -> dict:
        """The answer to hello: protocol 1 exactly as before; protocol 2 adds the subject's own contract
        (kernel declarations read from GPTQModel's classes, the fields each action observes, its levels)."""
        # warmup is listed so that devsim sends it and reports the reason a step gives when it cannot be simulated
        # (`unsupported`, as the protocol has it for "a warmup that needs a real GPU").
        answer: dict[str, Any] = {
            "type": "handshake",
            "protocol": 1,
            "subject": {"name": self.name, "version": self.version},
            "actions": self.actions(),
            "kernels": list(self.kernels),
            "events": EVENTS,
        }
        if protocol < 2:
            return answer
        answer = self.handshake_answer(
            [self.declaration(kernel) for kernel in self.kernels.values()],
            EVENTS,
            {action: list(fields) for action, fields in OBSERVES.items()},
            # the kit traces each step inside these packages and says which GPTQModel function decided what
            ["gptqmodel"],
        )
        if self.live:
            answer["live"] = True
            answer["observes"]["move"].append("retained_bytes")
        return answer

    def declaration(self, kernel: Kernel) -> dict:
        """A v2 kernel declaration, read from the GPTQModel class itself (never typed here); its tolerances
        from GPTQModel's own kernel tests (`tolerances`), where they state one."""
        declaration = {
            "name": kernel.name,
            "families": declared_families(kernel.cls),
            "methods": self.declared_methods(kernel.cls),
            "bits": sorted(int(b) for b in (getattr(kernel.cls, "SUPPORTS_BITS", None) or [])),
            "source": f"{kernel.cls.__module__}:{kernel.cls.__qualname__}",
        }
        stated = self.tolerances.get(kernel.name)
        if stated:
            declaration["tolerances"] = [
                {"dtype": dtype, "rtol": t.rtol, "atol": t.atol, "reference": t.reference, "source": t.source}
                for dtype, t in sorted(stated.items())
            ]
        return declaration

    def _read_tolerances(self, package_dir: Path) -> None:
        """The tolerances GPTQModel's kernel tests state, by devsim kernel name and dtype, each against the
        reference kernel the tests compare with (mapped by class name). A kernel's comparison with itself
        states nothing and is left out."""
        from . import livewarmup, tolerances

        stated, self.tolerance_note = tolerances.read(tolerances.tests_folder(package_dir))
        by_class = {kernel.cls_name: name for name, kernel in self.kernels.items()}
        for row in stated:
            name, reference = by_class.get(row.cls_name), by_class.get(row.reference_cls)
            if name is None or reference is None or name == reference:
                continue
            self.tolerances.setdefault(name, {})[row.dtype] = livewarmup.Tolerance(
                row.rtol, row.atol, reference, row.source
            )

    def declared_methods(self, cls: Any) -> list[str]:
        """devsim's method names for the class's SUPPORTS_METHODS (a contract-less wrapper: its QUANT_TYPE, when
        that is a GPTQModel METHOD). GPTQModel methods devsim has no name for are left out."""
        from gptqmodel.quantization import METHOD

        by_method = {entry["method"]: name for name, entry in self.methods.items()}
        methods = getattr(cls, "SUPPORTS_METHODS", None)
        if methods is None:
            quant_type = getattr(cls, "QUANT_TYPE", None)
            methods = [METHOD(quant_type)] if quant_type in {m.value for m in METHOD} else []
        names = [by_method.get(getattr(m, "value", m)) for m in methods]
        return sorted({n for n in names if n is not None})

    # ------------------------------------------------------------------------------------------- per scenario

    def enter(self, host: Host) -> str | None:
        """Child process: become `host`. Returns a reason when the host cannot be simulated. Live (in the
        subject's own process): check that the real machine is that host and make its current device current."""
        self.pool = None
        return super().enter(host)

    def entered(self, host: Host) -> None:
        """The host is entered: GPTQModel's import-time constants re-set for it (simulated), its caches cleared."""
        with self.recorder.quiet():
            if not self.live:
                self.state.reset_constants()
            self.clear_caches()

    def reusable(self) -> bool:
        """Child, after a scenario's `end`: whether the next scenario of the same host may run in this child.
        Only when nothing the scenario did outlives it: the device pool a lock step built is shut down and its
        threads (workers that pinned their devices, the janitor) have ended, and, once the caches `enter` clears
        are cleared, GPTQModel's state, the environment, the modules, the threads and torch's switches are what
        they were when the scenario began (ProjectState.unchanged)."""
        with self.recorder.quiet():
            if self.pool is not None:
                self._end_pool()
            self.clear_caches()
        return self.state.unchanged()

    def _end_pool(self) -> None:
        """Shut the scenario's device pool down (GPTQModel's own `shutdown`) and wait, at most POOL_EXIT_S in all,
        for the other threads to end. One still running leaves the thread count changed: the child is retired."""
        pool, self.pool = self.pool, None
        pool.shutdown(wait=False)
        deadline = time.monotonic() + POOL_EXIT_S
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def clear_caches(self) -> None:
        """Host-dependent caches GPTQModel fills lazily (functools caches, the validation cache)."""
        from gptqmodel.utils import importer

        clear_validation_cache = compat.optional(importer, "clear_validation_cache", "no validation cache is cleared")
        if clear_validation_cache is not None:
            clear_validation_cache()
        self.state.clear_caches()
        for ext, values in self._loaded.values():
            for name, value in zip(EXTENSION_STATE, values, strict=True):
                setattr(ext, name, value)
        self._loaded.clear()
        for registered in self._native_ops:
            registered.remove()
        self._native_ops.clear()

    # ------------------------------------------------------------------------------------------- steps

    def begin(self, msg: dict[str, Any]) -> None:
        """Reset what a step's hooks collect; live, a step may repeat and its retained bytes are measured."""
        self._device_errors = []
        self._families = []
        self._selectors = []
        self._held = []
        self._undecided = {}
        self._repeat = int(msg.get("repeat") or 1)
        if self._repeat > 1 and not self.live:
            raise ProtocolError(f"a repeated step outside a live run: {msg}")
        self._before = self._allocated() if self.live else None

    def perform(self, msg: dict[str, Any], handler: Handler, obs: dict[str, Any]) -> None:
        """The action, `repeat` times (each observation replacing the last); a native build missing live makes
        the step `unsupported` without its trace."""
        try:
            for _ in range(self._repeat):
                obs.clear()
                handler(msg, obs)
        except NeedsBuild as exc:
            raise Unsupported(str(exc)) from exc

    def refusal(self, exc: Refused) -> dict[str, Any]:
        """GPTQModel's refusal, classified by its wording (errors.toml)."""
        return self.classify(exc.error if exc.error is not None else exc)

    def observed_error(self, exc: Exception) -> dict[str, Any] | None:
        """What GPTQModel (or the simulated runtime) raised is an observation; a bug of the subject's own step code
        goes through (the child prints the traceback and exits non-zero)."""
        if raised_by_subject(exc):
            return None
        return self.classify(exc)

    def finish(self, ok: bool, obs: dict[str, Any]) -> None:
        """`undecided` (a step that failed was decided by whatever refused it; one that succeeded decided nothing
        here), `current_after`, and live the device bytes the step left allocated."""
        if ok and self._undecided:
            obs["undecided"] = dict(self._undecided)
        self.report_current(obs)
        if self._before is not None:
            obs["retained_bytes"] = self._allocated() - self._before

    def _allocated(self) -> int:
        """Live: device bytes the real caching allocator holds in tensors, over every visible GPU."""
        import torch

        gc.collect()
        count = self.torch_host.count() if self.torch_host.host.has_gpu_runtime else 0
        return sum(int(torch.cuda.memory_allocated(i)) for i in range(count))
