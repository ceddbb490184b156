"""The independent side of tools/live/bnb_table.py: seeded inputs, the 4-bit and INT8 weights decoded in
float64 from their packed storage (never through bitsandbytes' dequantize), the naive and modelling FP64
oracles, and the tolerance check. Pure torch on the CPU: no bitsandbytes, no GPTQModel, no GPU.
"""

from __future__ import annotations

from typing import Any

import torch

M, K, N = 64, 512, 128
RTOL = ATOL = 2e-3
INT8_THRESHOLD = 0.0  # GPTQModel's BitsAndBytesLinear quantizes weights and activations with threshold=0.0
# rtol = 2e-3 is finer than bfloat16's output resolution (relative half-ulp up to 3.9e-3), so the check is
# only meaningful where atol dominates: outputs of std 0.125 (|y| < ~0.6), the scale the seed's max error
# of 6.14e-4 implies. Override with --out-std.
OUT_STD = 0.125


# ---------------------------------------------------------------- inputs


def make_inputs(seed: int, out_std: float = OUT_STD) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded FP32 weight [N, K] and standard-normal input [M, K] on the CPU; outputs have std `out_std`."""
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(N, K, generator=gen) * (out_std / K**0.5)
    x = torch.randn(M, K, generator=gen)
    return weight, x


# ---------------------------------------------------------------- independent FP64 decode


def unpack_nibbles(packed: torch.Tensor, count: int) -> torch.Tensor:
    """4-bit indices from packed bytes, high nibble first (bitsandbytes' layout)."""
    flat = packed.reshape(-1).to(torch.int64)
    return torch.stack((flat >> 4, flat & 0xF), dim=1).reshape(-1)[:count]


def decode_absmax(state: Any) -> torch.Tensor:
    """Per-block absmax in float64; nested: code2[absmax_u8] * absmax2[block of 256] + offset."""
    if not getattr(state, "nested", False):
        return state.absmax.detach().cpu().to(torch.float64)
    inner = state.state2
    codes = inner.code.detach().cpu().to(torch.float64)
    idx = state.absmax.detach().cpu().to(torch.int64)
    scales = inner.absmax.detach().cpu().to(torch.float64).repeat_interleave(inner.blocksize)[: idx.numel()]
    return codes[idx] * scales + float(state.offset)


def decode_4bit(packed: torch.Tensor, state: Any) -> torch.Tensor:
    """The [N, K] weight of a 4-bit QuantState in float64, from its nibbles and code table."""
    rows, cols = (int(d) for d in state.shape)
    count = rows * cols
    values = state.code.detach().cpu().to(torch.float64)[unpack_nibbles(packed.detach().cpu(), count)]
    absmax = decode_absmax(state).repeat_interleave(int(state.blocksize))[:count]
    return (values * absmax).reshape(rows, cols)


def decode_int8(weight: torch.Tensor, scb: torch.Tensor) -> torch.Tensor:
    """The [N, K] weight of a row-wise int8 layer in float64: w_int8 * SCB / 127."""
    return weight.detach().cpu().to(torch.float64) * (scb.detach().cpu().to(torch.float64) / 127.0)[:, None]


# ---------------------------------------------------------------- oracles


def naive_oracle(x: torch.Tensor, weight64: torch.Tensor) -> torch.Tensor:
    """FP64 matmul of the decoded weight with the unrounded input."""
    return x.to(torch.float64) @ weight64.T


def round_to(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t.to(dtype).to(torch.float64)


def model_oracle_4bit(x: torch.Tensor, weight64: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """4-bit path: input cast to the compute dtype, weight dequantized into it, exact accumulation."""
    return round_to(x, dtype) @ round_to(weight64, dtype).T


def model_oracle_int8(
    x: torch.Tensor, w_int8: torch.Tensor, scb: torch.Tensor, dtype: torch.dtype, threshold: float
) -> torch.Tensor:
    """LLM.int8(): float16 input, outlier columns (|x| > threshold) kept in float16 against the dequantized
    weight, the rest row-wise absmax-quantized to int8 and multiplied in integers."""
    x16 = round_to(round_to(x, dtype), torch.float16)
    wq = w_int8.detach().cpu().to(torch.float64)
    scb64 = scb.detach().cpu().to(torch.float64)
    outliers = (x16.abs() > threshold).any(dim=0) if threshold > 0 else torch.zeros(x16.shape[1], dtype=torch.bool)
    inliers = x16.masked_fill(outliers[None, :], 0.0)
    row_absmax = inliers.abs().amax(dim=1).clamp_min(1e-30)
    # The rounding step is discontinuous: take the scaled value in float32 as the kernels do
    # (x * (127 / absmax), round half to even), or near-ties land on the other integer.
    scale32 = 127.0 / row_absmax.to(torch.float32)
    xq = torch.round(inliers.to(torch.float32) * scale32[:, None]).to(torch.float64)
    out = (xq @ wq.T) * row_absmax[:, None] * scb64[None, :] / (127.0 * 127.0)
    if bool(outliers.any()):
        out = out + x16[:, outliers] @ decode_int8(w_int8, scb)[:, outliers].T
    return out


def compare(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, bool]:
    """Max abs error, max |err| / (atol + rtol |ref|), and whether every element is within tolerance."""
    err = (out.detach().cpu().to(torch.float64) - ref).abs()
    ratio = err / (ATOL + RTOL * ref.abs())
    return float(err.max()), float(ratio.max()), bool((ratio <= 1.0).all())
