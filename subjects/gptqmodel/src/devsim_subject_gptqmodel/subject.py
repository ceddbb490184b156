"""GPTQModel's real dispatch code, driven by devsim steps on a simulated host.

`Subject.load()` runs once in the parent process: it patches torch (fakehost), imports GPTQModel and loads
the data files (kernels.toml, errors.toml, constants.toml). `Subject.enter(host)` runs in the forked child of
each scenario: it switches the simulated host, re-sets GPTQModel's import-time constants and clears its
caches. `Subject.step(message)` performs one action and returns the `observed` (or `unsupported`) message.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import re
import sys
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import fakehost
from .fakehost import MOVES, RECORDER, RUNTIME, Host

DATA = Path(__file__).parent
FAMILIES = ("cpu", "cuda", "rocm", "xpu", "mps")

# The trace events the subject records (fakehost's patched runtime plus the hooks below).
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

UNSUPPORTED_ACTIONS = {
    "discover": (
        "GPTQModel 7.7.0 has no device-discovery function that reports a vendor and per-GPU archs: "
        "gptqmodel.utils.torch.torch_devices() lists torch devices only, and device-smi (its hardware "
        "inventory) reads the real machine"
    ),
    "warmup": (
        "GPTQModel 7.7.0 warms a kernel up by running its forward/extension ops on the device, which needs a "
        "real GPU; the subject does not run GPTQModel kernels"
    ),
}


class StepUnsupported(Exception):
    """The step cannot be observed on this subject; the reason goes to devsim."""


@dataclass
class Kernel:
    name: str
    module: str
    cls_name: str
    bits: int = 4
    validate: dict = field(default_factory=dict)
    requires: list = field(default_factory=list)
    cls: Any = None
    missing: list = field(default_factory=list)  # of `requires`, the packages this environment lacks


@dataclass
class Rule:
    kind: str
    match: re.Pattern
    type: Optional[str] = None

    def matches(self, message: str, exc: Optional[BaseException]) -> bool:
        if self.type is not None:
            if exc is None or self.type not in {c.__name__ for c in type(exc).__mro__}:
                return False
        return bool(self.match.search(message))


def load_toml(name: str) -> dict:
    with open(DATA / name, "rb") as handle:
        return tomllib.load(handle)


class _ExtensionImportFinder(importlib.abc.MetaPathFinder):
    """Records import attempts of native-library packages (data: kernels.toml [extension].modules)."""

    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.split(".")[0] in self.names and "." not in fullname:
            RECORDER.record("extension_load", None, f"import {fullname}")
        return None  # the real finders decide


class Subject:
    def __init__(self) -> None:
        self.kernels: dict[str, Kernel] = {}
        self.methods: dict[str, dict] = {}
        self.rules: list[Rule] = []
        self.constants: list[dict] = []
        self.version = "unknown"
        self.pool = None
        self._lock_keys: dict[int, str] = {}
        self._held: list[str] = []  # pool keys whose locks the current step took
        self._device_errors: list[BaseException] = []
        self._families: list[tuple[Any, Any]] = []  # (selector device, family) seen by importer._device_family

    # ------------------------------------------------------------------------------------------- loading

    def load(self, import_host: Optional[Host] = None) -> None:
        """Parent process: patch torch, import GPTQModel, resolve the kernel map.

        GPTQModel is imported on `import_host` (default: a CPU-only build); children re-set the import-time
        constants for their own host. The constants test imports on each host instead, to compare.
        """
        fakehost.install(import_host or Host())
        fakehost.install_move_hook()
        import torch  # noqa: F401

        import gptqmodel  # noqa: F401  (banner, env setup, thread pools)
        import gptqmodel.utils.importer  # noqa: F401
        from gptqmodel.version import __version__

        self.version = __version__
        data = load_toml("kernels.toml")
        for name, entry in data["kernel"].items():
            kernel = Kernel(
                name=name,
                module=entry["module"],
                cls_name=entry["class"],
                bits=entry.get("bits", 4),
                validate=dict(entry.get("validate", {})),
                requires=list(entry.get("requires", [])),
            )
            kernel.missing = [pkg for pkg in kernel.requires if importlib.util.find_spec(pkg) is None]
            try:
                kernel.cls = getattr(importlib.import_module(kernel.module), kernel.cls_name)
            except (ImportError, AttributeError) as exc:
                print(f"devsim-subject: kernel {name}: {kernel.module}.{kernel.cls_name} not importable: {exc}",
                      file=sys.stderr)
                continue
            self.kernels[name] = kernel
        self.methods = data.get("method", {})
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
        sys.meta_path.insert(0, _ExtensionImportFinder(data.get("extension", {}).get("modules", [])))
        self.rules = [
            Rule(kind=r["kind"], match=re.compile(r["match"]), type=r.get("type"))
            for r in load_toml("errors.toml")["rule"]
        ]
        self.constants = load_toml("constants.toml")["constant"]
        self._install_hooks()
        self._plan_resets()

    def _install_hooks(self) -> None:
        """Hooks on GPTQModel itself. They record and pass results through unchanged, except the extension
        loader, which stands in for the native build the simulated host is assumed to have."""
        from gptqmodel.utils import threadx
        from gptqmodel.utils.cpp import TorchOpsJitExtension

        # extension_load: every GPTQModel native extension goes through TorchOpsJitExtension.load (JIT build or
        # cached torch.ops library). The simulated host has them built: the load succeeds without compiling.
        def load(ext: Any) -> bool:
            RECORDER.record("extension_load", None, ext.name)
            ext._load_attempted, ext._load_result, ext._last_error = True, True, ""
            return True

        TorchOpsJitExtension.load = load

        # lock: the device pool's per-device reader/writer locks.
        subject = self
        original_read, original_write = threadx._RWLock.acquire_read, threadx._RWLock.acquire_write

        def acquire_read(lock: Any) -> Any:
            subject._lock_event(lock, "read")
            return original_read(lock)

        def acquire_write(lock: Any) -> Any:
            subject._lock_event(lock, "write")
            return original_write(lock)

        threadx._RWLock.acquire_read = acquire_read
        threadx._RWLock.acquire_write = acquire_write

        # The simulated host's CPU is a plain x86-64 without AVX512-BF16 (devsim's hosts model no CPU ISA).
        # GPTQModel reads /proc/cpuinfo of the machine the subject runs on; left alone, a runner with
        # AVX512-BF16 makes CPU selection try TorchCpuAvx512Linear first and load its native extension, so
        # outcomes would depend on the CI machine. Rebound wherever it was imported by name.
        from gptqmodel.utils import cpu_features

        machine_probe = cpu_features.has_avx512_bf16

        def no_avx512_bf16() -> bool:
            return False

        for module in [m for n, m in sys.modules.items() if n.startswith("gptqmodel") and m]:
            if vars(module).get("has_avx512_bf16") is machine_probe:
                module.has_avx512_bf16 = no_avx512_bf16

        # the family kernel selection and validation assign to a selector: importer._device_family
        import gptqmodel.utils.importer as importer

        original_family = importer._device_family

        def device_family(device: Any) -> Any:
            family = original_family(device)
            if threading.get_ident() == RECORDER.thread:
                subject._families.append((device, family))
            return family

        importer._device_family = device_family

        # the causes behind "does not support device": every mapped class's validate_device
        for kernel in self.kernels.values():
            self._wrap_validate_device(kernel.cls)

    def _wrap_validate_device(self, cls: Any) -> None:
        current = cls.__dict__.get("validate_device")
        if current is not None and getattr(getattr(current, "__func__", None), "_devsim", False):
            return
        impl = cls.validate_device.__func__  # this class's own, or the one its MRO gives it

        def wrapper(klass: Any, device: Any, _impl: Callable = impl) -> Any:
            return self._observe_device_error(lambda: _impl(klass, device))

        wrapper._devsim = True  # type: ignore[attr-defined]
        cls.validate_device = classmethod(wrapper)

    def _observe_device_error(self, call: Callable) -> Any:
        try:
            return call()
        except BaseException as exc:
            if threading.get_ident() == RECORDER.thread:
                self._device_errors.append(exc)
            raise

    def _lock_event(self, lock: Any, mode: str) -> None:
        key = self._lock_keys.get(id(lock))
        if key is None or threading.get_ident() != RECORDER.thread:
            return
        device = int(key.split(":")[1]) if key.startswith("cuda:") else None
        RECORDER.record("lock", device, f"{mode} {key}")
        self._held.append(key)

    def handshake(self) -> dict:
        # warmup and discover are listed so that devsim sends them and reports the reason each step gives
        # (`unsupported`, as the protocol has it for "a warmup that needs a real GPU").
        actions = ["normalize", "resolve", "validate", "select", "lock", "move", "set_device", "warmup", "discover"]
        return {
            "type": "handshake",
            "protocol": 1,
            "subject": {"name": "gptqmodel", "version": self.version},
            "actions": actions,
            "kernels": list(self.kernels),
            "events": EVENTS,
        }

    # ------------------------------------------------------------------------------------------- per scenario

    def enter(self, host: Host) -> Optional[str]:
        """Child process: become `host`. Returns a reason when the host cannot be simulated."""
        if host.torch not in ("cuda", "hip", "cpu"):
            return f"unknown torch build {host.torch!r}"
        for gpu in host.visible_gpus():
            if host.torch == "hip" and not gpu.arch.startswith("gfx"):
                return f"a HIP build cannot drive {gpu.arch}"
            if host.torch == "cuda" and not gpu.is_nvidia:
                return f"a CUDA build cannot drive {gpu.arch}"
        RUNTIME.configure(host)
        with RECORDER.quiet():
            self.reset_constants()
            self.clear_caches()
        return None

    def _plan_resets(self) -> None:
        """Parent: find, once, every module binding of each constant and every functools cache to clear, so a
        child only touches those (a forked child pays a copy-on-write page fault per object it touches)."""
        modules = [mod for name, mod in sys.modules.items() if name.startswith("gptqmodel") and mod]
        by_name = {mod.__name__: mod for mod in modules}
        self._constant_plan = []
        for const in self.constants:
            home = by_name.get(const["module"])
            if home is None:
                print(f"devsim-subject: constants.toml names {const['module']}, which is not imported",
                      file=sys.stderr)
                continue
            old = getattr(home, const["name"])
            holders = [home] + [m for m in modules if m is not home and vars(m).get(const["name"], _MISSING) is old]
            code = compile(const["expr"], f"<constants.toml {const['module']}.{const['name']}>", "eval")
            self._constant_plan.append((home, const["name"], code, holders))
        caches: dict[int, Any] = {}
        for mod in modules:
            for value in list(vars(mod).values()):
                _collect_cache(value, caches)
                if isinstance(value, type) and value.__module__ == mod.__name__:
                    for attr in list(vars(value).values()):
                        if isinstance(attr, (classmethod, staticmethod)):
                            attr = attr.__func__
                        _collect_cache(attr, caches)
        self._caches = list(caches.values())

    def reset_constants(self) -> None:
        """Child: re-evaluate each import-time constant for this host and rebind it wherever it was imported."""
        for home, name, code, holders in self._constant_plan:
            new = eval(code, vars(home))  # noqa: S307 - expressions from the package's own data file
            for mod in holders:
                setattr(mod, name, new)

    def clear_caches(self) -> None:
        """Child: host-dependent caches GPTQModel fills lazily (functools caches, the validation cache)."""
        import gptqmodel.utils.importer as importer

        importer.clear_validation_cache()
        for cache in self._caches:
            cache.cache_clear()

    # ------------------------------------------------------------------------------------------- steps

    def step(self, msg: dict) -> dict:
        check_step(msg)
        action = msg["action"]
        head = {"scenario": msg["scenario"], "number": msg["number"]}
        if action in UNSUPPORTED_ACTIONS:
            return {"type": "unsupported", **head, "reason": UNSUPPORTED_ACTIONS[action]}
        handler = getattr(self, f"do_{action}", None)
        if handler is None:
            return {"type": "unsupported", **head, "reason": f"the GPTQModel subject has no action {action!r}"}
        obs: dict[str, Any] = {}
        self._device_errors = []
        self._families = []
        self._held = []
        with RECORDER.capture() as trace:
            try:
                handler(msg, obs)
                ok = True
            except StepUnsupported as exc:
                return {"type": "unsupported", **head, "reason": str(exc)}
            except _Refused as exc:
                ok = False
                obs["error"] = self.classify(exc.error)
            except ProtocolError:
                raise
            except Exception as exc:
                if raised_by_subject(exc):
                    raise  # a bug of the subject itself: the child prints the traceback and exits non-zero
                ok = False  # the code under test (or the simulated runtime) raised: an observation
                obs["error"] = self.classify(exc)
        if RUNTIME.host.has_gpu_runtime and RUNTIME.count() > 0:
            obs["current_after"] = RUNTIME.current()
        return {"type": "observed", **head, "ok": ok, **obs, "trace": trace}

    def classify(self, exc: BaseException) -> dict:
        message = str(exc)
        if isinstance(exc, KeyError) and exc.args:
            message = str(exc.args[0])
        kind = None
        for rule in self.rules:
            if rule.matches(message, exc):
                kind = rule.kind
                break
        if kind is None:
            for cause in self._device_errors:
                cause_message = str(cause)
                kind = next((r.kind for r in self.rules if r.matches(cause_message, cause)), None)
                if kind:
                    break
        return {"kind": kind, "message": message}

    # -- selectors and families

    def selector(self, sel: dict) -> Any:
        """The value the code under test receives, built in Python as the protocol's `form` says."""
        import torch
        from gptqmodel.models._const import DEVICE

        form = sel["form"]
        if form == "string":
            return str(sel["written"])
        if form == "ordinal":
            return int(sel["written"])
        if form == "family_enum":
            return DEVICE[sel["family"].upper()]
        if form == "torch_device":
            index = sel.get("index")
            try:  # torch itself judges the device type (e.g. no "rocm" device type exists)
                return torch.device(sel["device_type"]) if index is None else torch.device(sel["device_type"], index)
            except (RuntimeError, ValueError) as exc:
                raise _Refused(exc) from exc
        raise ProtocolError(f"unknown selector form {form!r}")

    def family_of(self, device: Any, obs: dict) -> Any:
        """GPTQModel's normalize_device: the family every action reports."""
        from gptqmodel.models._const import normalize_device

        family = normalize_device(device)
        value = getattr(family, "value", family)
        if value in FAMILIES:
            obs["family"] = value
            obs["ordinal"] = None  # normalize_device returns a family enum: no ordinal survives it
        else:
            print(f"devsim-subject: normalize_device gave {family!r}, not a devsim family", file=sys.stderr)
        return family

    def boundary(self, family: Any) -> Any:
        """The enum -> torch.device conversion GPTQModel uses at execution boundaries."""
        if self.boundary_fn is None:
            return family.to_torch_device()
        return self.boundary_fn(family)

    def kernel(self, msg: dict) -> Kernel:
        name = msg["kernel"]
        kernel = self.kernels.get(name)
        if kernel is None:
            raise StepUnsupported(f"kernel {name} has no GPTQModel class in the subject's kernel map")
        missing = kernel.missing
        if missing:
            raise StepUnsupported(
                f"{kernel.cls_name}.validate_once() needs {', '.join(missing)}, not installed in the subject's "
                "environment, so GPTQModel's verdict for this host cannot be observed"
            )
        return kernel

    # -- actions

    def do_normalize(self, msg: dict, obs: dict) -> None:
        self.family_of(self.selector(msg["device"]), obs)

    def do_resolve(self, msg: dict, obs: dict) -> None:
        family = self.family_of(self.selector(msg["device"]), obs)
        obs["torch_device"] = str(self.boundary(family))

    def do_validate(self, msg: dict, obs: dict) -> None:
        import torch
        from gptqmodel.utils.importer import validate_quant_linear

        kernel = self.kernel(msg)
        device = self.selector(msg["device"])
        args = {"bits": kernel.bits, "group_size": 128, "desc_act": False, "sym": True, "pack_dtype": "int32"}
        args.update(kernel.validate)
        args["pack_dtype"] = getattr(torch, args["pack_dtype"])
        try:
            ok, err = validate_quant_linear(kernel.cls, device=device, **args)
        finally:
            self._selector_view(device, obs)
        if not ok:
            raise _Refused(err if err is not None else RuntimeError(f"{kernel.cls_name} refused without a reason"))

    def do_select(self, msg: dict, obs: dict) -> None:
        import torch
        import gptqmodel.utils.importer as importer
        from gptqmodel.quantization import FORMAT, METHOD
        from gptqmodel.utils.backend import BACKEND

        method = self.methods.get(msg["method"])
        if method is None:
            raise StepUnsupported(
                f"GPTQModel 7.7.0 has no quantization method for devsim's {msg['method']!r} "
                "(its W4A kernels are explicit GPTQ backends with auto-select priority 0)"
            )
        device = self.selector(msg["device"])
        judged: list[tuple[Any, bool]] = []
        original = importer.validate_quant_linear

        def observing(cls: Any, **kwargs: Any) -> Any:
            result = original(cls, **kwargs)
            judged.append((cls, bool(result[0])))
            return result

        importer.validate_quant_linear = observing
        try:
            chosen = importer.select_quant_linear(
                bits=msg["bits"],
                group_size=128,
                desc_act=False,
                sym=True,
                device=device,
                backend=BACKEND.AUTO,
                format=FORMAT(method["format"]),
                quant_method=METHOD(method["method"]),
                pack=False,
                pack_dtype=torch.int32,
            )
        except Exception:
            self._unobservable_candidates(judged, None)
            raise
        finally:
            importer.validate_quant_linear = original
            self._selector_view(device, obs)
        self._unobservable_candidates(judged, chosen)
        name = next((k.name for k in self.kernels.values() if k.cls is chosen), None)
        if name is None:
            print(f"devsim-subject: selected {chosen!r} has no devsim name in kernels.toml", file=sys.stderr)
        else:
            obs["selected"] = name

    def _unobservable_candidates(self, judged: list, chosen: Any) -> None:
        """A candidate refused only because a package is missing here would change the pick on a real host."""
        for cls, ok in judged:
            if cls is chosen:
                return
            if ok:
                continue
            for kernel in self.kernels.values():
                if kernel.cls is cls and kernel.missing:
                    raise StepUnsupported(
                        f"selection considered {cls.__name__}, whose validate_once() needs "
                        f"{', '.join(kernel.missing)} (not installed in the subject's environment), so the "
                        "pick on this host cannot be observed"
                    )

    def do_lock(self, msg: dict, obs: dict) -> None:
        scope = self.selector(msg["scope"])
        pool = self._pool()
        if msg.get("mode", "read") == "write":
            context = pool.lock([scope])
        else:
            context = pool.read_lock(scope)
        with context:
            obs["covers"] = list(self._held)

    def _pool(self) -> Any:
        """GPTQModel's DeviceThreadPool discovered on the simulated host (built once per scenario, unrecorded).

        The pool GPTQModel itself builds (gptqmodel.get_device_thread_pool) adds linalg warmups that allocate
        on the GPU; the locks do not depend on them or on the worker counts, so this one has neither.
        """
        if self.pool is None:
            from gptqmodel.utils.threadx import DeviceThreadPool

            with RECORDER.quiet():
                self.pool = DeviceThreadPool(
                    inference_mode=True, workers={"cuda:per": 1, "cpu": 1}, empty_cache_every_n=0
                )
            self._lock_keys = {id(lock): key for key, lock in self.pool._locks.items()}
        return self.pool

    def do_move(self, msg: dict, obs: dict) -> None:
        import torch
        from gptqmodel.utils.model import move_to

        self.kernel(msg)
        family = self.family_of(self.selector(msg["device"]), obs)
        target = self.boundary(family)
        obs["torch_device"] = str(target)
        with MOVES.capture() as landings:
            move_to(torch.zeros(4), device=target)
        obs["lands_on"] = landings[-1][1] if landings else "cpu"

    def do_set_device(self, msg: dict, obs: dict) -> None:
        import torch

        torch.cuda.set_device(int(msg["ordinal"]))

    def _selector_view(self, device: Any, obs: dict) -> None:
        """validate / select: the selector as GPTQModel's kernel machinery saw it. `family` is what
        importer._device_family answered for the first selector device it judged during the step (validate: the
        validation-cache key; select: the family check), `ordinal` and `torch_device` that device's own. A
        family enum the machinery never passed to _device_family is its own family."""
        import torch

        if self._families:
            seen, family = self._families[0]
        else:
            from gptqmodel.models._const import DEVICE

            if not isinstance(device, DEVICE):
                return
            seen, family = device, device
        value = getattr(family, "value", family)
        if value in FAMILIES:
            obs["family"] = value
        if isinstance(seen, torch.device):
            obs["ordinal"] = seen.index
            obs["torch_device"] = str(seen)
        else:
            obs["ordinal"] = None


class _Refused(Exception):
    """A (False, error) verdict from GPTQModel's validation, carried to classification."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class ProtocolError(Exception):
    """A message the subject cannot accept."""


STEP_FIELDS = {
    "normalize": ("device",),
    "resolve": ("device",),
    "validate": ("kernel", "device"),
    "warmup": ("kernel", "device"),
    "move": ("kernel", "device"),
    "select": ("method", "bits", "device"),
    "lock": ("scope",),
    "set_device": ("ordinal",),
    "discover": (),
}
SELECTOR_FIELDS = {
    "string": ("written",),
    "ordinal": ("written",),
    "family_enum": ("family",),
    "torch_device": ("device_type",),
}


def check_step(msg: dict) -> None:
    """A step devsim could not have sent is a protocol error, never an observation of GPTQModel."""
    for key in ("scenario", "number", "action"):
        if key not in msg:
            raise ProtocolError(f"a step without {key!r}: {msg}")
    needed = STEP_FIELDS.get(msg["action"])
    if needed is None:
        return  # unknown actions are answered `unsupported`
    for key in needed:
        if key not in msg:
            raise ProtocolError(f"a {msg['action']} step without {key!r}: {msg}")
    for key in ("device", "scope"):
        if key in msg:
            sel = msg[key]
            if not isinstance(sel, dict) or sel.get("form") not in SELECTOR_FIELDS:
                raise ProtocolError(f"{key} is not a selector: {sel!r}")
            for field_name in SELECTOR_FIELDS[sel["form"]]:
                if field_name not in sel:
                    raise ProtocolError(f"a {sel['form']} selector without {field_name!r}: {sel!r}")
            if sel["form"] == "family_enum" and sel["family"] not in (*FAMILIES, "all"):
                raise ProtocolError(f"unknown family {sel['family']!r}")


def raised_by_subject(exc: BaseException) -> bool:
    """Whether the innermost frame of `exc` is the subject's own step code (not GPTQModel, torch, or the
    simulated runtime, whose torch-like errors are observations)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    if last is None:
        return False
    path = Path(last).resolve()
    return path.parent == DATA and path.name != "fakehost.py"


_MISSING = object()


def _collect_cache(value: Any, caches: dict[int, Any]) -> None:
    """functools caches (lru_cache / cache) only: GPTQModel has lazy proxies whose attribute access builds a
    thread pool, so nothing else is probed."""
    if isinstance(value, functools._lru_cache_wrapper):
        caches[id(value)] = value
