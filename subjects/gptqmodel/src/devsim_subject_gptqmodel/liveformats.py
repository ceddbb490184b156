"""Live checkpoints by format: weights drawn from a fixed seed, packed once by GPTQModel's own reference packer for
the format, loaded into any kernel class of that format as GPTQModel's loader loads a checkpoint.

A format (kernels.toml `weights`) offers three operations:

- `draw(bits)`: the weights, an object whose `float_weight(dtype)` is the (K, N) float weight they stand for;
- `pack(packer, weights, bits)`: the checkpoint (a state dict), packed by the format's reference packer class
  (`reference`, a devsim kernel name: the project's own reference kernel for the format) with GPTQModel's own
  packing code, exactly as its quantizer packs a layer of that format;
- `load(cls, state, bits)`: a kernel class's module on the CPU with that checkpoint loaded, ready for
  `livewarmup.run`.

`checkpoint(packer, bits)` draws and packs, and gives the weights the FP64 oracle multiplies with: the drawn
codes themselves where GPTQModel's packer recovers them exactly (GPTQ, AWQ: `scale * (code - zero)` is
representable), or the weight the stored tensors stand for, dequantized here in float64 (FP8).

The formats:

- "gptq": livewarmup's GPTQ checkpoint (symmetric, saved as v1), reference packer `gptq_torch`.
- "awq": an AWQ checkpoint in GEMM format (`qweight`, `qzeros`, `scales`), asymmetric (zero points drawn too),
  packed by `awq_torch` (AwqTorchLinear.pack, what GPTQModel's AWQ processor calls through
  `utils.model.pack_module`). The loader loads a GEMM checkpoint as it is (no zero-point conversion); kernels
  of other layouts (Marlin, ExLlama v2) repack it in their own `post_init`.
- "fp8": an FP8 checkpoint (`weight` in float8_e4m3fn, `weight_scale_inv` per output row), packed by `fp8_torch`
  (TorchFP8Linear.pack_original, what GPTQModel's weight-only processor calls). The codes are drawn as FP8
  values and each row's scale as a power of two (one element of each row at ±448, the format's largest
  value, pins the row's absolute maximum), so GPTQModel's quantizer stores exactly the drawn codes; the oracle
  still dequantizes what it stored: `weight / weight_scale_inv`, in float64.

Every failure of the subject's own doing (drawing, packing, building the module, loading the state) is
`livewarmup.Unbuildable`; only `Exception`s are caught, so the subject's `NeedsBuild` (a JIT build that is off or
failed, raised by a constructor's validation) passes through to the step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from . import livewarmup
from .livewarmup import GROUP, SEED_WEIGHTS, K, M, N, Unbuildable, module_args


class FloatWeights(Protocol):
    def float_weight(self, dtype: torch.dtype) -> torch.Tensor:
        """(K, N): the float weight the checkpoint stands for, in `dtype`."""
        ...


State = dict[str, torch.Tensor]


class Format:
    """A checkpoint format (see the module's docstring); subclasses implement draw, pack and load."""

    name: str = ""
    reference: str = ""  # the devsim kernel whose class packs the format's checkpoints
    # the shape and format for a live warmup's `numerics`, or None to keep livewarmup's own description
    shape: str | None = None
    held: tuple[str, ...] = ()  # the state entries a module of the format must load

    def draw(self, bits: int) -> Any:
        raise NotImplementedError

    def pack(self, packer: Any, weights: Any, bits: int) -> State:
        raise NotImplementedError

    def load(self, cls: Any, state: State, bits: int) -> Any:
        raise NotImplementedError

    def stands_for(self, weights: Any, state: State) -> FloatWeights:
        """The weights the oracle multiplies with: by default the drawn ones (the packer recovers them)."""
        del state
        return weights

    def checkpoint(self, packer: Any, bits: int) -> tuple[FloatWeights, State]:
        try:
            weights = self.draw(bits)
        except Exception as exc:
            raise Unbuildable(f"drawing {self.name} weights failed: {type(exc).__name__}: {exc}") from exc
        state = self.pack(packer, weights, bits)
        return self.stands_for(weights, state), state

    def _loaded(self, cls: Any, args: dict[str, Any], state: State) -> Any:
        """`cls(**args)` with `state` loaded as GPTQModel's loader loads a checkpoint into the modules it built."""
        try:
            module = cls(**args)
            missing, unexpected = module.load_state_dict(state, strict=False)
        except Exception as exc:
            raise Unbuildable(
                f"{cls.__name__} could not take {self.name.upper()} weights: {type(exc).__name__}: {exc}"
            ) from exc
        del unexpected
        lacking = [name for name in missing if name in self.held]
        if lacking:
            raise Unbuildable(
                f"{cls.__name__} does not hold {self.name.upper()} weights (missing {', '.join(lacking)})"
            )
        return module.eval()


class Gptq(Format):
    """livewarmup's GPTQ checkpoint, unchanged."""

    name = "gptq"
    reference = "gptq_torch"
    held = ("qweight", "qzeros", "scales")

    def draw(self, bits: int) -> livewarmup.Weights:
        return livewarmup.Weights.draw(bits)

    def pack(self, packer: Any, weights: Any, bits: int) -> State:
        return livewarmup.packed_state(packer, weights, bits)

    def load(self, cls: Any, state: State, bits: int) -> Any:
        return livewarmup.build(cls, state, bits)


def awq_module_args(bits: int) -> dict[str, Any]:
    """What GPTQModel's loader builds an AWQ module with (create_quant_module), for the drawn shape."""
    return {**module_args(bits), "sym": False}


class Awq(Format):
    """An asymmetric AWQ checkpoint in GEMM format (see the module's docstring)."""

    name = "awq"
    reference = "awq_torch"
    shape = f"{M}x{K}x{N} float16, AWQ GEMM format, group size {GROUP}, asymmetric"
    held = ("qweight", "qzeros", "scales")

    def draw(self, bits: int) -> livewarmup.Weights:
        """livewarmup's codes and scales, with zero points drawn over the whole code range (AWQ's are free)."""
        weights = livewarmup.Weights.draw(bits)
        generator = torch.Generator().manual_seed(SEED_WEIGHTS + 2)
        zeros = torch.randint(0, 2**bits, tuple(weights.zeros.shape), generator=generator, dtype=torch.int32)
        return dataclasses.replace(weights, zeros=zeros)

    def pack(self, packer: Any, weights: Any, bits: int) -> State:
        try:
            module = packer(**awq_module_args(bits))
            # as utils.model.pack_module packs an AWQ module: scales and zero points (out_features, groups)
            module.pack(
                linear=weights.linear(),
                scales=weights.scales.T.contiguous(),
                zeros=weights.zeros.T.contiguous(),
                g_idx=None,
            )
            return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}
        except Exception as exc:
            raise Unbuildable(f"AWQ packing with {packer.__name__} failed: {type(exc).__name__}: {exc}") from exc

    def load(self, cls: Any, state: State, bits: int) -> Any:
        return self._loaded(cls, {**awq_module_args(bits), "register_buffers": True}, state)


FP8_MAX = 448.0  # float8_e4m3fn's largest finite value
FP8_EXPONENTS = (12, 15)  # each row's scale is 2**-e for e drawn in [12, 15)


@dataclass
class Fp8Weights:
    codes: torch.Tensor  # (N, K) float8_e4m3fn, as the module stores its weight
    scale_inv: torch.Tensor  # (N,) float32: GPTQModel's inverse scale semantics, weight = code / scale_inv

    @classmethod
    def draw(cls) -> Fp8Weights:
        generator = torch.Generator().manual_seed(SEED_WEIGHTS)
        raw = torch.randint(0, 256, (N, K), generator=generator, dtype=torch.int32)
        raw = torch.where((raw & 0x7F) == 0x7F, raw ^ 1, raw)  # 0x7f and 0xff are NaN in e4m3fn
        codes = raw.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)
        # one element of each row at ±448 pins the row's absolute maximum, hence GPTQModel's per-row scale
        codes[:, 0] = torch.where(codes[:, 0] < 0, -FP8_MAX, FP8_MAX)
        exponents = torch.randint(*FP8_EXPONENTS, (N,), generator=generator)
        scale_inv = torch.pow(2.0, exponents.to(torch.float32))
        return cls(codes.to(torch.float8_e4m3fn), scale_inv)

    def float_weight(self, dtype: torch.dtype) -> torch.Tensor:
        """(K, N): code / scale_inv, computed in float64."""
        weight = self.codes.to(torch.float64) / self.scale_inv.to(torch.float64)[:, None]
        return weight.T.to(dtype)

    def linear(self) -> torch.nn.Linear:
        linear = torch.nn.Linear(K, N, bias=False)
        linear.weight.data = self.float_weight(torch.float32).T.contiguous()
        return linear


def fp8_module_args() -> dict[str, Any]:
    """TorchFP8Linear as GPTQModel's FP8 config builds it: float8_e4m3fn, per-row scales (FP8Config defaults)."""
    return {**module_args(8), "group_size": -1, "format": "float8_e4m3fn", "weight_scale_method": "row"}


class Fp8(Format):
    """An FP8 checkpoint with per-row scales (see the module's docstring)."""

    name = "fp8"
    reference = "fp8_torch"
    shape = f"{M}x{K}x{N} float16, FP8 e4m3fn weights, per-row scales"
    held = ("weight", "weight_scale_inv")

    def draw(self, bits: int) -> Fp8Weights:
        if bits != 8:
            raise ValueError(f"FP8 weights are 8 bits, not {bits}")
        return Fp8Weights.draw()

    def pack(self, packer: Any, weights: Any, bits: int) -> State:
        try:
            module = packer(**fp8_module_args())
            # as the weight-only processor packs an FP8 module: GPTQModel's own quantize_fp8_weight, no scales given
            module.pack_original(linear=weights.linear(), scales=None, zeros=None, g_idx=None)
            return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}
        except Exception as exc:
            raise Unbuildable(f"FP8 packing with {packer.__name__} failed: {type(exc).__name__}: {exc}") from exc

    def stands_for(self, weights: Any, state: State) -> FloatWeights:
        """The weight the stored tensors stand for (GPTQModel's inverse scale semantics), not the drawn one."""
        del weights
        stored = state.get("weight"), state.get("weight_scale_inv")
        if stored[0] is None or stored[1] is None:
            raise Unbuildable(f"the FP8 checkpoint lacks weight or weight_scale_inv (has {', '.join(state)})")
        return Fp8Weights(stored[0], stored[1])

    def load(self, cls: Any, state: State, bits: int) -> Any:
        del bits
        return self._loaded(cls, fp8_module_args(), state)


# kernels.toml `weights` -> its format
FORMATS: dict[str, Format] = {fmt.name: fmt for fmt in (Gptq(), Awq(), Fp8())}
