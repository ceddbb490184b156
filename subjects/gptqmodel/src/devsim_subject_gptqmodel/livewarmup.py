"""A live warmup: a GPTQModel kernel module on GPTQ-packed weights, run on the real device, judged by an oracle.

The weights are integer codes, per-group scales and zero points drawn from a fixed seed; the float weight they
stand for, `scale * (code - zero)`, is exactly representable, so GPTQModel's own `pack()` recovers the codes. The
kernel's forward on the target device is compared with an independent FP64 oracle, `x @ (scale * (code -
zero))` computed here in float64 from the codes themselves (never from GPTQModel's unpacking); where the kernel
declares its own arithmetic on the activations (kernels.toml `activations`: W4AFP8 rounds them to float8 e4m3
with one scale per row), the oracle rounds them as the kernel does first (`ACTIVATIONS`), and says so. Where
GPTQModel's own kernel tests state a tolerance (read by `tolerances`), the forward is judged as those tests judge
it: against its Torch kernel's forward on the same weights and input, at the test's rtol and atol. Where the
project states none, the forward is not judged (`not_judged`: the verdict is set aside, never a failure at a
tolerance the subject would invent); the seed's check, rtol = atol = 2e-3 against the oracle, is still reported
for information. Both errors are reported either way.

What is the subject's own doing (building the weights, packing them with the reference GPTQ packer) is kept
apart from what is the kernel's (its module on the device, post_init, forward): a failure of the former is
`Unbuildable` (the step answers `unsupported`), a failure of the latter is the kernel's observation.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

M, K, N, GROUP = 64, 512, 128, 128
RTOL = ATOL = 2e-3  # the seed's check, reported for information where the project states no tolerance
NOT_STATED = "the project states no tolerance"
WEIGHT_ONLY = "the float16 input as given times the exact weight, in float64"
E4M3_MAX = 448.0
# The activation roundings a kernel declares (kernels.toml `activations`) -> what the oracle then models.
ACTIVATIONS = {
    "fp8_e4m3_row": (
        "the float16 input rounded as the kernel rounds it (one float32 scale per row, amax / 448; x / scale "
        "clamped to ±448 and rounded to float8 e4m3, to nearest even; times the scale), then times the exact "
        "weight, in float64"
    ),
}
SEED_WEIGHTS = 20261201
SEED_INPUT = SEED_WEIGHTS + 1


class Unbuildable(Exception):
    """The subject could not prepare the kernel's weights (its own failure, never the kernel's)."""


@dataclass
class Weights:
    codes: torch.Tensor  # (K, N) int32
    scales: torch.Tensor  # (K // GROUP, N) float16
    zeros: torch.Tensor  # (K // GROUP, N) int32
    g_idx: torch.Tensor  # (K,) int32

    @classmethod
    def draw(cls, bits: int) -> Weights:
        generator = torch.Generator().manual_seed(SEED_WEIGHTS)
        groups = K // GROUP
        codes = torch.randint(0, 2**bits, (K, N), generator=generator, dtype=torch.int32)
        scales = (torch.rand(groups, N, generator=generator) * 0.01 + 0.005).to(torch.float16)
        zeros = torch.full((groups, N), 2 ** (bits - 1), dtype=torch.int32)
        g_idx = torch.arange(K, dtype=torch.int32) // GROUP
        return cls(codes, scales, zeros, g_idx)

    def float_weight(self, dtype: torch.dtype) -> torch.Tensor:
        """(K, N): scale * (code - zero), in `dtype`."""
        index = self.g_idx.long()
        return self.scales.to(dtype)[index] * (self.codes - self.zeros[index]).to(dtype)

    def linear(self) -> torch.nn.Linear:
        linear = torch.nn.Linear(K, N, bias=False)
        linear.weight.data = self.float_weight(torch.float32).T.contiguous()
        return linear


def module_args(bits: int | str) -> dict[str, Any]:
    return {
        "bits": bits,
        "group_size": GROUP,
        "sym": True,
        "desc_act": False,
        "in_features": K,
        "out_features": N,
        "bias": False,
        "pack_dtype": torch.int32,
    }


def packed_state(packer: Any, weights: Weights, bits: int) -> dict[str, torch.Tensor]:
    """A GPTQ checkpoint of the weights as GPTQModel saves one: packed by the reference packer class (the portable
    torch kernel), then converted to the saved GPTQ v1 zero-point format by GPTQModel's own
    `convert_gptq_v2_to_v1_format_module` (packing stores logical zero points)."""
    try:
        from gptqmodel.quantization.config import QuantizeConfig
        from gptqmodel.utils.model import convert_gptq_v2_to_v1_format_module

        module = packer(**module_args(bits))
        # pack_original: GPTQModel's pure-Python GPTQ packer (pack() may JIT-build a native block packer)
        module.pack_original(weights.linear(), weights.scales.T.contiguous(), weights.zeros.T.contiguous(), weights.g_idx)
        convert_gptq_v2_to_v1_format_module(module, QuantizeConfig(bits=bits, offload_to_disk=False))
        return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}
    except Exception as exc:
        raise Unbuildable(f"GPTQ packing with {packer.__name__} failed: {type(exc).__name__}: {exc}") from exc


def packed_by_itself(cls: Any, weights: Weights, bits: int) -> Any:
    """The kernel's module on the CPU with the weights packed by its own `pack_original`, as GPTQModel's quantizer
    packs a layer for a kernel whose checkpoint format only it writes."""
    try:
        module = cls(**module_args(bits))
        module.pack_original(weights.linear(), weights.scales.T.contiguous(), weights.zeros.T.contiguous(), weights.g_idx)
    except Exception as exc:
        raise Unbuildable(f"{cls.__name__} could not pack the weights itself: {type(exc).__name__}: {exc}") from exc
    return module.eval()


def build(cls: Any, state: dict[str, torch.Tensor], bits: int) -> Any:
    """The kernel's module on the CPU with the checkpoint loaded as GPTQModel's loader loads one: the state, then
    the loader's own v1-to-v2 zero-point conversion (`convert_gptq_v1_to_v2_format`) for a kernel that requires
    v2."""
    try:
        from gptqmodel.quantization.config import QuantizeConfig
        from gptqmodel.utils.model import convert_gptq_v1_to_v2_format

        module = cls(**module_args(bits))
        missing, unexpected = module.load_state_dict(state, strict=False)
        convert_gptq_v1_to_v2_format(torch.nn.Sequential(module), QuantizeConfig(bits=bits, offload_to_disk=False), cls)
    except Exception as exc:
        raise Unbuildable(f"{cls.__name__} could not take GPTQ-packed weights: {type(exc).__name__}: {exc}") from exc
    if [name for name in missing if name in ("qweight", "qzeros", "scales")]:
        raise Unbuildable(f"{cls.__name__} does not hold GPTQ-packed weights (missing {', '.join(missing)})")
    del unexpected
    return module.eval()


def fp8_e4m3_rows(x: torch.Tensor) -> torch.Tensor:
    """(rows, K) -> the values a per-row float8 e4m3 rounding leaves, in float64, computed as GPTQModel's
    `w4a_triton._token_fp8_quant` computes them: in float32, scale = amax / 448 (1 for a zero row), the
    quotient clamped to ±448 and rounded to e4m3 (round to nearest even), times the scale."""
    x32 = x.to(torch.float32)
    amax = x32.abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    codes = (x32 / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return codes.to(torch.float64) * scale.to(torch.float64)


def oracle(x: torch.Tensor, weights: Weights, activations: str | None = None) -> tuple[torch.Tensor, str]:
    """The FP64 oracle's output for input `x` and what it models: the input as given, or rounded as the kernel
    declares it rounds its activations (`ACTIVATIONS`), times the exact weight."""
    weight = weights.float_weight(torch.float64)
    if activations is None:
        return x.to(torch.float64) @ weight, WEIGHT_ONLY
    if activations not in ACTIVATIONS:
        raise Unbuildable(f"the oracle models no activation rounding `{activations}` (it models {', '.join(ACTIVATIONS)})")
    return fp8_e4m3_rows(x) @ weight, ACTIVATIONS[activations]


@dataclass(frozen=True)
class Tolerance:
    """The tolerance a forward is judged by: the project's own against its reference kernel's output; or, where
    the project states none (`source` None), none: the seed's check against the FP64 oracle is reported for
    information and the forward is not judged."""

    rtol: float = RTOL
    atol: float = ATOL
    reference: str | None = None  # the reference kernel's devsim name
    source: str | None = None  # where the project states it


SEED_TOLERANCE = Tolerance()


@dataclass
class Forward:
    ran_on: Any  # the output's ordinal, or "cpu"
    max_abs_error: float  # against the FP64 oracle
    within: bool  # within the tolerance, against what it names
    tolerance: Tolerance = SEED_TOLERANCE
    reference: str | None = None  # the reference kernel compared with (judged against where the tolerance says)
    reference_max_abs_error: float | None = None
    oracle: str = WEIGHT_ONLY  # what the FP64 oracle modelled

    @property
    def judged(self) -> bool:
        """Whether a tolerance the project states judged the forward."""
        return self.tolerance.source is not None


def _forward(module: Any, x: torch.Tensor, target: torch.device) -> torch.Tensor:
    from gptqmodel.utils.model import gptqmodel_post_init

    model = torch.nn.Sequential(module).to(target)
    # GPTQModel's own post-load initialisation (per-device scratch buffers, then each module's post_init), as
    # its loader calls it after the weights are on the device
    gptqmodel_post_init(model, use_act_order=False)
    with torch.inference_mode():
        y = model(x.to(target))
    if target.type == "cuda":
        torch.cuda.synchronize(y.device)
    return y


def run(
    module: Any,
    weights: Weights,
    target: torch.device,
    tolerance: Tolerance = SEED_TOLERANCE,
    reference: Any = None,
    reference_name: str | None = None,
    quiet: Callable[[], AbstractContextManager[Any]] = nullcontext,
    activations: str | None = None,
) -> Forward:
    """The kernel's own part: onto the device, GPTQModel's post-load init, one float16 forward; then the FP64
    oracle and, given the project's reference kernel (`reference`, its module built on the same checkpoint),
    that kernel's forward on the same input and device. The forward is judged by `tolerance`: against the
    reference as GPTQModel's tests compare (`isclose` in float32: |y - r| <= atol + rtol·|r|) where the
    tolerance names it, else against the oracle (modelling the kernel's declared `activations` rounding). The
    reference's forward runs under `quiet` (the subject's recorder: its device calls are not the kernel's).
    Without a stated tolerance (`source` None) the seed's check is computed for information only and the
    forward is not judged (`Forward.judged`)."""
    generator = torch.Generator().manual_seed(SEED_INPUT)
    x = torch.rand(M, K, generator=generator, dtype=torch.float32).mul_(2).sub_(1).to(torch.float16)
    y = _forward(module, x, target)
    ran_on: Any = y.device.index if y.device.type == "cuda" else y.device.type
    expected_fp64, model = oracle(x, weights, activations)
    got = y.detach().to("cpu", torch.float64)
    error = (got - expected_fp64).abs()
    finite = bool(torch.isfinite(got).all().item())
    forward = Forward(ran_on, float(error.max().item()), False, tolerance, oracle=model)
    if reference is not None:
        with quiet():
            expected = _forward(reference, x, target).detach().to("cpu", torch.float32)
        actual = y.detach().to("cpu", torch.float32)
        forward.reference = reference_name
        forward.reference_max_abs_error = float((actual - expected).abs().max().item())
        if tolerance.reference is not None:
            close = torch.isclose(expected, actual, rtol=tolerance.rtol, atol=tolerance.atol)
            forward.within = bool(close.all().item()) and finite
            return forward
    forward.within = bool(torch.all(error <= tolerance.atol + tolerance.rtol * expected_fp64.abs()).item()) and finite
    return forward


def numerics(forward: Forward) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "max_abs_error": forward.max_abs_error,
        "rtol": forward.tolerance.rtol,
        "atol": forward.tolerance.atol,
        "within": forward.within,
        "shape": f"{M}x{K}x{N} float16, group size {GROUP}",
        "dtype": "float16",
        "oracle": forward.oracle,
    }
    if not forward.judged:
        answer["not_judged"] = NOT_STATED
    if forward.tolerance.source is not None:
        answer["tolerance_source"] = forward.tolerance.source
    if forward.reference is not None:
        answer["reference"] = forward.reference
        answer["reference_max_abs_error"] = forward.reference_max_abs_error
    return answer
