"""CPU checks of tools/live/bnb_table.py's independent decode, oracles and JSON rows (no GPU, no GPTQModel).

    /work/main/.venv-torch/bin/python -m pytest tools/live/tests -q
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bnb_table as bt

bnb = pytest.importorskip("bitsandbytes")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def quantize(quant_type: str, dtype: torch.dtype, nested: bool) -> tuple[torch.Tensor, Any, torch.Tensor]:
    weight, _ = bt.make_inputs(seed=1)
    weight = weight.to(dtype)
    packed, state = bnb.functional.quantize_4bit(
        weight, blocksize=64, compress_statistics=nested, quant_type=quant_type, quant_storage=torch.uint8
    )
    return packed, state, weight


@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_independent_4bit_decode_equals_bnb_dequantize(quant_type: str, dtype: torch.dtype, nested: bool) -> None:
    packed, state, _ = quantize(quant_type, dtype, nested)
    ours = bt.decode_4bit(packed, state)
    theirs = bnb.functional.dequantize_4bit(packed, quant_state=state).to(torch.float64)
    assert ours.shape == theirs.shape == (bt.N, bt.K)
    # bitsandbytes rounds to `dtype` (through float32); ours is exact float64: equal to that rounding.
    eps = torch.finfo(dtype).eps
    assert ((ours - theirs).abs() <= eps * ours.abs() + 1e-12).all()


def test_int8_decode_is_row_scaled() -> None:
    weight = torch.tensor([[127, -64], [1, 0]], dtype=torch.int8)
    scb = torch.tensor([2.0, 0.5])
    expected = torch.tensor([[2.0, -128 / 127], [0.5 / 127, 0.0]], dtype=torch.float64)
    assert torch.allclose(bt.decode_int8(weight, scb), expected, rtol=0, atol=1e-15)


def corrupt_absmax(state: Any) -> None:
    """Swap the first two absmax entries' codes (nested) or scale the first one (plain)."""
    if state.nested:
        state.absmax[0], state.absmax[1] = int(state.absmax[1]) ^ 0x40, int(state.absmax[0]) ^ 0x40
    else:
        state.absmax[0] *= 3.0


@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_corrupted_absmax_makes_the_oracle_fail(quant_type: str) -> None:
    dtype = torch.float32
    packed, state, _ = quantize(quant_type, dtype, nested=True)
    _, x = bt.make_inputs(seed=1)
    out = bnb.matmul_4bit(x, packed.t(), quant_state=state)
    ok = bt.compare(out, bt.model_oracle_4bit(x, bt.decode_4bit(packed, state), dtype))
    assert ok[2], ok
    corrupt_absmax(state)
    bad = bt.compare(out, bt.model_oracle_4bit(x, bt.decode_4bit(packed, state), dtype))
    assert not bad[2]
    assert bad[0] > 10 * bt.ATOL


def test_corrupted_int8_scale_makes_the_oracle_fail() -> None:
    weight, x = bt.make_inputs(seed=1)
    module = bt.build_bitsandbytes("int8", torch.float16, weight, "cpu")
    out = bt.forward(module, x.to(torch.float16))
    wq, scb = bt.quant_tensors("bitsandbytes", module)
    assert bt.compare(out, bt.model_oracle_int8(x, wq, scb, torch.float16, 0.0))[2]
    scb = scb.clone()
    scb[0] *= 1.5
    bad = bt.compare(out, bt.model_oracle_int8(x, wq, scb, torch.float16, 0.0))
    assert not bad[2] and bad[0] > 10 * bt.ATOL


def test_int8_model_oracle_beats_the_naive_one() -> None:
    weight, x = bt.make_inputs(seed=0)
    module = bt.build_bitsandbytes("int8", torch.bfloat16, weight, "cpu")
    out = bt.forward(module, x.to(torch.bfloat16))
    wq, scb = bt.quant_tensors("bitsandbytes", module)
    naive = bt.compare(out, bt.naive_oracle(x, bt.decode_int8(wq, scb)))[0]
    model = bt.compare(out, bt.model_oracle_int8(x, wq, scb, torch.bfloat16, 0.0))[0]
    assert model < naive


EXPECTED_FIELDS = {
    "impl", "quant_type", "dtype", "status", "reason", "path", "backend_calls", "naive_max_abs_err",
    "model_max_abs_err", "model_max_tol_ratio", "within_tol", "oracle", "storage_bytes", "retained_bytes",
    "additional_bytes_after_repeats", "peak_extra_bytes",
}


def test_json_rows_have_every_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unsupported(*_args: object) -> torch.nn.Module:
        raise NotImplementedError("no such path on this device")

    monkeypatch.setitem(bt.BUILDERS, "gptqmodel", unsupported)
    out = tmp_path / "bnb.json"
    argv = ["--device", "cpu", "--quant-types", "nf4", "--dtypes", "float32", "--json", str(out)]
    assert bt.main(argv) == 0
    data = json.loads(out.read_text())
    assert {"device", "device_name", "torch", "bitsandbytes", "gptqmodel"} <= set(data["environment"])
    rows = {row["impl"]: row for row in data["rows"]}
    for row in rows.values():
        assert set(row) == EXPECTED_FIELDS == set(bt.ROW_FIELDS)
    measured, skipped = rows["bitsandbytes"], rows["gptqmodel"]
    assert measured["backend_calls"] and measured["path"]
    assert measured["storage_bytes"] > bt.N * bt.K // 2
    assert measured["retained_bytes"] is None  # no CUDA allocator on the CPU
    assert skipped["status"] == "skipped" and skipped["within_tol"] is None
    assert "NotImplementedError" in skipped["reason"]
    if bnb.functional.has_avx512bf16():
        # Known wrong: on a CPU with AVX512-BF16, bitsandbytes 0.50.2 registers its fused bf16 gemv_4bit CPU kernel
        # (backends/cpu/ops.py) instead of dequantize + F.linear; its output here is 0.67 off the FP64 oracles
        # (2026-12-06), which the tool reports as a failing row. Not yet known whether the kernel expects a packed
        # weight layout the tool's build skips or computes wrong; the row is kept, the verdict expected to fail.
        assert measured["status"] == "fail" and measured["within_tol"] is False
        pytest.xfail("bitsandbytes' fused AVX512-BF16 CPU 4-bit kernel disagrees with the oracles (see comment)")
    assert measured["status"] == "pass" and measured["within_tol"] is True
