"""The GPTQModel subject's warmup action: simulated (fakewarmup) or live (livewarmup, on the checkpoints
liveformats packs once in the parent)."""

from __future__ import annotations

from typing import Any

from devsim_subject_kit import Refused, Unsupported, action, blame

from .actions import ActionsMixin
from .model import REFUSALS, WARMUP_NEEDS_GPU, Kernel


class WarmupsMixin(ActionsMixin):
    """`Subject`'s warmup step and the modules it runs."""

    @action("warmup")
    def do_warmup(self, msg: dict, obs: dict) -> None:
        """The kernel gated as an explicit choice is (validate_quant_linear on the requested device): a refusal is
        the observation. Simulated, an admitted kernel's module is moved to the device at the torch boundary,
        initialised and run once by GPTQModel's own code on torch's fake tensors, or on CPU-backed ones when it
        reads a value (fakewarmup; `unsupported` when its forward needs what neither can run). Live,
        its module is built on its format's checkpoint (kernels.toml `weights`: GPTQ, AWQ or FP8, packed by
        GPTQModel's own reference packer for the format; liveformats), moved to the device at the torch boundary,
        initialised and run once, and judged against the FP64 oracle (livewarmup); `ran_on` is where torch put
        the output. A kernel whose format has no builder answers `unsupported`."""
        # imported by `load` already: a first import here would change (and retire) a reused child
        from . import fakewarmup, liveformats, livewarmup

        kernel = self.kernel(msg)
        if not self.live:
            device = self.selector(msg["device"])
            if kernel.contract:  # a wrapper's own forward is its only gate
                self.gate(kernel, device)  # a refusal is observed (`Refused`)
            target = self.boundary(device)

            def build() -> Any:
                with self.recorder.quiet():
                    return self._simulated_module(kernel)

            blame.observed("ran_on", target)  # the module is moved to GPTQModel's boundary device
            try:
                obs["ran_on"] = fakewarmup.ran_on(build, target, self.recorder, self._refuses)
            except fakewarmup.Refusal as refusal:
                raise Refused.of(refusal.error) from refusal.error
            except fakewarmup.Unsimulable as exc:
                raise Unsupported(f"{WARMUP_NEEDS_GPU}: {exc}", trace=exc.events) from exc
            return
        fmt = liveformats.FORMATS.get(kernel.weights or "")
        if kernel.activations is not None and kernel.activations not in livewarmup.ACTIVATIONS:
            raise Unsupported(
                f"{kernel.cls_name} rounds its activations as `{kernel.activations}` (kernels.toml), which the FP64 "
                f"oracle does not model (it models {', '.join(livewarmup.ACTIVATIONS)})",
                trace=[],
            )
        if fmt is None:
            raise Unsupported(
                f"the live warmup builds {', '.join(sorted(liveformats.FORMATS))} checkpoints; {kernel.cls_name} "
                f"takes another format ({kernel.weights or 'not named in kernels.toml'}), for which the subject has "
                "no weight builder",
                trace=[],
            )
        device = self.selector(msg["device"])
        self.gate(kernel, device)
        target = self.boundary(device)
        try:
            with self.recorder.quiet():
                weights, module = self._checkpoint_module(kernel)
        except livewarmup.Unbuildable as exc:
            raise Unsupported(str(exc), trace=[]) from exc
        # Judged by GPTQModel's stated tolerance against its reference kernel where its tests state one; else not
        # judged (the seed's check reported for information), still compared with the format's reference kernel
        # (the one whose packer wrote the checkpoint), so both errors are reported either way.
        tolerance = self.tolerances.get(kernel.name, {}).get("float16", livewarmup.SEED_TOLERANCE)
        reference_name = tolerance.reference or (fmt.reference if fmt.reference != kernel.name else None)
        reference = None
        if reference_name is not None and reference_name in self.kernels:
            try:
                with self.recorder.quiet():
                    reference = self._checkpoint_module(self.kernels[reference_name])[1]
            except livewarmup.Unbuildable as exc:
                raise Unsupported(f"the project's reference kernel {reference_name}: {exc}", trace=[]) from exc
        forward = livewarmup.run(
            module,
            weights,
            target,
            tolerance,
            reference,
            reference_name,
            quiet=self.recorder.quiet,
            activations=kernel.activations,
        )
        del module, reference
        obs["ran_on"] = forward.ran_on
        numerics = livewarmup.numerics(forward)
        if fmt.shape is not None and "shape" in numerics:
            numerics["shape"] = fmt.shape
        obs["numerics"] = numerics

    def _refuses(self, error: BaseException) -> bool:
        """Whether an error a kernel's forward raised is its refusal of the device (by GPTQModel's wordings,
        errors.toml) rather than a limit of the simulation."""
        return self.classify(error)["kind"] in REFUSALS

    def _pack_checkpoints(self) -> None:
        """Pack, once in the parent, the checkpoint of every (format, width) a kernel with a live weight builder
        takes (kernels.toml `weights`; liveformats), with the format's reference packer: every warmup of those
        kernels, in every child, loads the same one. A packing failure is kept to be raised by the warmups that
        need it, as `livewarmup.Unbuildable`."""
        from . import liveformats, livewarmup

        wanted = {(k.weights, k.bits) for k in self.kernels.values() if k.weights in liveformats.FORMATS}
        for name, bits in sorted(wanted):
            fmt = liveformats.FORMATS[name]
            packer = self.kernels.get(fmt.reference)
            if packer is None:
                self._checkpoints[(name, bits)] = livewarmup.Unbuildable(
                    f"the {name.upper()} reference packer {fmt.reference} is not mapped"
                )
                continue
            try:
                with self.recorder.quiet():
                    self._checkpoints[(name, bits)] = fmt.checkpoint(packer.cls, bits)
            except livewarmup.Unbuildable as exc:
                self._checkpoints[(name, bits)] = exc

    def _checkpoint_module(self, kernel: Kernel) -> tuple[Any, Any]:
        """The kernel's module on the CPU with its format's checkpoint loaded (packed by `_pack_checkpoints` with
        GPTQModel's reference packer for the format), and the weights it stands for; `livewarmup.Unbuildable`
        when the subject could not prepare them."""
        from . import liveformats, livewarmup

        fmt = liveformats.FORMATS.get(kernel.weights or "")
        checkpoint = self._checkpoints.get((kernel.weights or "", kernel.bits))
        if fmt is None or checkpoint is None:
            raise livewarmup.Unbuildable(
                f"no {kernel.weights} checkpoint of {kernel.bits} bits was packed at the subject's start"
            )
        if isinstance(checkpoint, Exception):
            raise checkpoint
        weights, state = checkpoint
        return weights, fmt.load(kernel.cls, state, kernel.bits)

    def _simulated_module(self, kernel: Kernel) -> Any:
        """A simulated warmup's module on the CPU, as a model load leaves it (kernels.toml `weights`): its format's
        checkpoint (GPTQ, AWQ, FP8: the live warmup's, liveformats), the weights packed by the kernel's own
        `pack_original` (bitsandbytes'), or else the empty buffers its constructor gives it; the subject failing to
        prepare it is `fakewarmup.Unsimulable`."""
        from . import fakewarmup, liveformats, livewarmup

        try:
            if kernel.weights in liveformats.FORMATS:
                return self._checkpoint_module(kernel)[1]
            if kernel.weights == "own":
                return livewarmup.packed_by_itself(kernel.cls, livewarmup.Weights.draw(kernel.bits), kernel.bits)
        except livewarmup.Unbuildable as exc:
            raise fakewarmup.Unsimulable(str(exc)) from exc
        return fakewarmup.build(kernel.cls, kernel.module_bits)
