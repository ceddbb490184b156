"""The GPTQModel subject's actions other than warmup: the selector a step names, GPTQModel's reading of it
(family, torch boundary, kernel gate, selection, locks, moves) and the classification of the errors it raises."""

from __future__ import annotations

import sys
from typing import Any

from devsim_subject_kit import ProtocolError, Refused, Unsupported, action, blame
from devsim_subject_kit.patches import Patches

from . import compat
from .model import FAMILIES, Kernel, SubjectBase


class ActionsMixin(SubjectBase):
    """`Subject`'s steps (`@action`s, but warmup) and what they share. A step that cannot be observed raises the
    kit's `Unsupported` with `trace=[]`: the events GPTQModel recorded before it stopped are answered with it."""

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
                raise Refused.of(exc) from exc
        raise ProtocolError(f"unknown selector form {form!r}")

    def family_of(self, device: Any, obs: dict) -> Any:
        """GPTQModel's normalize_device: the family the configuration path stores. It returns a family enum, so
        no ordinal is observed here (the ordinal is read where a torch.device crosses into torch)."""
        from gptqmodel.models import _const

        family = _const.normalize_device(device)  # looked up at call time: the overlay may replace it
        self._report_family(family, obs, "normalize_device")
        return family

    @staticmethod
    def _report_family(family: Any, obs: dict, gave: str) -> None:
        """`family`, a family enum a GPTQModel function (`gave`) returned, as the observed family, placed there."""
        blame.observed("family", family)
        value = getattr(family, "value", family)
        if value in FAMILIES:
            obs["family"] = value
        else:
            print(f"devsim-subject: {gave} gave {family!r}, not a devsim family", file=sys.stderr)

    def boundary(self, device: Any) -> Any:
        """The torch.device GPTQModel builds at an execution boundary for a requested device: the boundary helper
        (kernels.toml [boundary]) applied to the selector as requested, so an explicit ordinal reaches it. The
        seed's `as_torch_device` takes every public device value itself (it normalizes first). 7.7.0's
        normalize_device_like only ever sees values GPTQModel has already read (torch.device / DEVICE), so the
        selector first goes through GPTQModel's own reading of a public device value, importer.
        _as_selector_device, as the loader's device maps and kernel selection do: "CPU" -> cpu, "rocm" ->
        DEVICE.ROCM, 1 -> cuda:1 (an ordinal of the active accelerator); what it refuses is its own error."""
        import torch
        from gptqmodel.utils import importer

        if not self.boundary_name.endswith(":as_torch_device"):
            device = compat.need(importer, "_as_selector_device", "boundary conversion (resolve, move, warmup)")(device)
        target = device.to_torch_device() if self.boundary_fn is None else self.boundary_fn(device)
        if not isinstance(target, torch.device):
            target = torch.device(target)
        return target

    @staticmethod
    def report_target(target: Any, obs: dict) -> None:
        """torch_device and ordinal as torch itself holds them: cuda:1 -> 1; indexless cuda -> null."""
        obs["torch_device"] = str(target)
        obs["ordinal"] = target.index
        blame.observed("torch_device", target)
        blame.observed("ordinal", target)

    def kernel(self, msg: dict) -> Kernel:
        name = msg["kernel"]
        kernel = self.kernels.get(name)
        if kernel is None:
            raise Unsupported(f"kernel {name} has no GPTQModel class in the subject's kernel map", trace=[])
        lacks = compat.constant_lacks(self.state.unevaluable, [kernel.module])
        if lacks is not None:
            raise compat.Lacking(lacks)
        self._depends_on_missing(kernel, set())
        return kernel

    def _needed_missing(self, kernel: Kernel, attempted: set[str]) -> list[str]:
        """The packages `kernel` requires, this environment lacks and GPTQModel tried to import (`attempted`, or its
        module at import). Once seen, for the rest of the process: a later verdict may come from GPTQModel's cache
        of the first."""
        attempted = attempted | set(kernel.missing_at_import)
        missing = [pkg for pkg in kernel.missing if pkg in attempted or (kernel.name, pkg) in self._dependent]
        self._dependent.update((kernel.name, pkg) for pkg in missing)
        return missing + kernel.build_lacks

    def _depends_on_missing(self, kernel: Kernel, attempted: set[str]) -> None:
        """`unsupported` when the verdict on `kernel` rests on a missing package (`_needed_missing`)."""
        missing = self._needed_missing(kernel, attempted)
        if missing:
            raise Unsupported(
                f"{kernel.cls_name}.validate_once() needs {', '.join(missing)}, not installed in the subject's "
                "environment, so GPTQModel's verdict for this host cannot be observed", trace=[]
            )

    # -- actions

    @action("normalize")
    def do_normalize(self, msg: dict, obs: dict) -> None:
        self.family_of(self.selector(msg["device"]), obs)

    @action("resolve")
    def do_resolve(self, msg: dict, obs: dict) -> None:
        device = self.selector(msg["device"])
        self.family_of(device, obs)
        self.report_target(self.boundary(device), obs)

    def validate_args(self, kernel: Kernel) -> dict:
        import torch

        args: dict[str, Any] = {"bits": kernel.bits, "group_size": 128, "desc_act": False, "sym": True,
                                "pack_dtype": "int32"}
        args.update(kernel.validate)
        args["pack_dtype"] = getattr(torch, str(args["pack_dtype"]))
        return args

    def gate(self, kernel: Kernel, device: Any) -> None:
        """GPTQModel's kernel gate: validate_quant_linear, the entry point selection and an explicit backend use.
        A class without the quant-linear contract (no validate(): 7.7.0's EXL3 and FP4 wrappers) goes through no
        gate of GPTQModel's: the loader builds it by backend alone, so the project decides nothing here and the
        step's `ok` is undecided. Whatever such a class adds (a validate_device nothing of GPTQModel calls) is not
        called: only its own first forward can refuse (`do_warmup`)."""
        from gptqmodel.utils import importer

        if not kernel.contract:
            self._undecided["ok"] = (
                f"{kernel.cls_name} is not a quant-linear (no validate()): GPTQModel gates it nowhere before its "
                "first forward"
            )
            return
        validate_quant_linear = compat.need(importer, "validate_quant_linear", "kernel gate (validate, move, warmup)")
        self._missing.attempts.clear()
        verdict = validate_quant_linear(kernel.cls, device=device, **self.validate_args(kernel))
        blame.observed("ok", verdict)  # an admission is the gate's answer; a refusal is placed by its error
        ok, err = verdict
        if not ok:
            # a refusal that came from a missing package is this environment's, not GPTQModel's verdict
            self._depends_on_missing(kernel, self._missing.attempts)
            raise Refused.of(err if err is not None else RuntimeError(f"{kernel.cls_name} refused without a reason"))

    @action("validate")
    def do_validate(self, msg: dict, obs: dict) -> None:
        from gptqmodel.utils import importer

        kernel = self.kernel(msg)
        compat.need(importer, "_device_family", "selector view (validate, select)")
        device = self.selector(msg["device"])
        try:
            if not kernel.contract:
                # the loader's placement view of the requested device (7.7.0 validates nothing else here)
                compat.need(importer, "selector_device_family", "placement view of a wrapper (validate)")(device)
            self.gate(kernel, device)
        finally:
            self._selector_view(device, obs)

    @action("select")
    def do_select(self, msg: dict, obs: dict) -> None:
        import torch
        from gptqmodel.quantization import FORMAT, METHOD
        from gptqmodel.utils import importer
        from gptqmodel.utils.backend import BACKEND

        method = self.methods.get(msg["method"])
        if method is None:
            raise Unsupported(
                f"GPTQModel 7.7.0 has no quantization method for devsim's {msg['method']!r} "
                "(its W4A kernels are explicit GPTQ backends with auto-select priority 0)", trace=[]
            )
        compat.need(importer, "_device_family", "selector view (validate, select)")
        lacks = compat.constant_lacks(self.state.unevaluable, [k.module for k in self.kernels.values()])
        if lacks is not None:
            raise compat.Lacking(lacks)  # any candidate's verdict may read it
        device = self.selector(msg["device"])
        if method["method"] == "exl3":
            self._select_exl3(device, obs)
            return
        judged: list[tuple[Any, bool]] = []
        original = compat.need(importer, "validate_quant_linear", "view of the candidates (select)")

        admitted_at: dict[Any, dict | None] = {}  # candidate -> where the shared gate admitted it

        def observing(cls: Any, **kwargs: Any) -> Any:
            result = original(cls, **kwargs)
            judged.append((cls, bool(result[0])))
            if result[0]:
                admitted_at.setdefault(cls, blame.just_returned(result))
            return result

        patch = Patches()
        patch.set(importer, "validate_quant_linear", observing)
        self._missing.attempts.clear()
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
            patch.undo()
            self._selector_view(device, obs)
        self._unobservable_candidates(judged, chosen)
        name = next((k.name for k in self.kernels.values() if k.cls is chosen), None)
        # the pick may run on this target because the shared gate admitted it: where a policy check of the
        # pick (declared families, arch) fails, that admission decided it, as for a validate step
        admitted = admitted_at.get(chosen)
        if admitted is not None:
            blame.observed_at("selected", admitted)
        else:
            blame.observed("selected", chosen)
        if name is None:
            print(f"devsim-subject: selected {chosen!r} has no devsim name in kernels.toml", file=sys.stderr)
        else:
            obs["selected"] = name

    def _select_exl3(self, device: Any, obs: dict) -> None:
        """7.7.0 never routes EXL3 through select_quant_linear (METHOD.EXL3 is not in its kernel tables): the
        loader converts the device like any other (normalize_device_device_map, auto_select_device), then picks
        the EXL3 module inline in from_quantized, by backend alone. The conversion is observed; the pick is no
        function of GPTQModel's the subject can call, so `selected` is undecided, never modelled."""
        from gptqmodel.utils import importer

        auto_select_device = compat.need(importer, "auto_select_device", "EXL3 placement (select)")
        device_map = compat.need(importer, "normalize_device_device_map", "EXL3 placement (select)")
        try:
            auto_select_device(device_map(device, None), None)
        finally:
            self._selector_view(device, obs)
        self._undecided["selected"] = (
            "GPTQModel picks the EXL3 module inline in its model loader (from_quantized), by backend, in no "
            "function of its own"
        )

    def _unobservable_candidates(self, judged: list, chosen: Any) -> None:
        """A candidate refused only because a package is missing here would change the pick on a real host."""
        for cls, ok in judged:
            if cls is chosen:
                return
            if ok:
                continue
            for kernel in self.kernels.values():
                if kernel.cls is cls and self._needed_missing(kernel, self._missing.attempts):
                    raise Unsupported(
                        f"selection considered {cls.__name__}, whose validate_once() needs "
                        f"{', '.join(kernel.missing + kernel.build_lacks)} (not installed in the subject's environment), so the "
                        "pick on this host cannot be observed", trace=[]
                    )

    @action("lock")
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

            with self.recorder.quiet():
                self.pool = DeviceThreadPool(
                    inference_mode=True, workers={"cuda:per": 1, "cpu": 1}, empty_cache_every_n=0
                )
            self._lock_keys = {id(lock): key for key, lock in self.pool._locks.items()}
        return self.pool

    @action("move")
    def do_move(self, msg: dict, obs: dict) -> None:
        """The kernel's placement path: normalize_device (the family quantize_config.device stores), the kernel's
        own gate on that family (quantize() validates the kernel with select_quant_linear(device=DEVICE(
        quantize_config.device)) before any module moves), then the requested device at the torch boundary and
        utils.model.move_to. torch_device/ordinal are those of the torch.device move_to really passed to torch."""
        import torch
        from gptqmodel.utils.model import move_to

        kernel = self.kernel(msg)
        device = self.selector(msg["device"])
        family = self.family_of(device, obs)
        self.gate(kernel, family)
        target = self.boundary(device)
        with self.torch_host.moves.capture() as landings:
            move_to(torch.zeros(4), device=target)
        passed = torch.device(landings[-1][0]) if landings else target
        self.report_target(passed, obs)
        obs["lands_on"] = landings[-1][1] if landings else "cpu"
        if passed == target:  # move_to passed GPTQModel's boundary device on: that is what decided both
            for field_name in ("torch_device", "ordinal", "lands_on"):
                blame.observed(field_name, target)

    @action("set_device")
    def do_set_device(self, msg: dict, obs: dict) -> None:
        import torch

        torch.cuda.set_device(int(msg["ordinal"]))

    @action("default_device")
    def do_default_device(self, msg: dict, obs: dict) -> None:
        """GPTQModel's pick when no device is asked for: importer.auto_select_device(None, BACKEND.AUTO), what
        from_quantized / from_pretrained without a device or device_map and a default quantize config reach. It
        returns a family enum, so only the family is observed."""
        from gptqmodel.utils import importer
        from gptqmodel.utils.backend import BACKEND

        auto_select_device = compat.need(importer, "auto_select_device", "the default device (default_device)")
        self._report_family(auto_select_device(None, BACKEND.AUTO), obs, "auto_select_device")

    def _selector_view(self, device: Any, obs: dict) -> None:
        """validate / select: the selector as GPTQModel's kernel machinery saw it. `family` is what
        importer._device_family answered for the first selector device it judged during the step (validate: the
        validation-cache key; select: the family check), `ordinal` and `torch_device` that device's own. A
        family enum the machinery made of a public value (importer._as_selector_device) is its family; one the
        caller handed in and the machinery never passed to _device_family decided nothing: the family is the
        caller's own value, so `family` is undecided there (its ordinal, none, is still the target's)."""
        import torch
        from gptqmodel.models._const import DEVICE

        if self._families:
            seen, family, decided = self._families[0]
            blame.observed_at("family", decided)  # what _device_family answered, where it decided it
        else:
            # no device reached _device_family: the family enum the machinery holds instead, e.g. "rocm" (which
            # importer._as_selector_device turns into DEVICE.ROCM) or DEVICE.ROCM itself
            held = [s for s in (*self._selectors, device) if isinstance(s, DEVICE)]
            if not held:
                return
            seen = family = held[0]
            if family is device:
                self._undecided["family"] = (
                    "GPTQModel's kernel machinery never converts a family enum it is handed (no call of "
                    "importer._device_family on it): the family is the caller's own value"
                )
        value = getattr(family, "value", family)
        if value in FAMILIES and "family" not in self._undecided:
            obs["family"] = value
        if isinstance(seen, torch.device):
            self.report_target(seen, obs)
        elif value in FAMILIES:
            obs["ordinal"] = None  # observed: the machinery holds a family target, which has no ordinal
