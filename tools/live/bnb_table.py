"""Reproduce the seed's bitsandbytes table live: NF4/FP4/INT8 x FP16/BF16/FP32 through GPTQModel's
`BitsAndBytesLinear` and through bitsandbytes alone, checked against independent FP64 oracles.

Run on a CUDA GPU (GPTQModel source on PYTHONPATH, bitsandbytes installed):

    PYTHONPATH=/path/to/gptqmodel-src python3 tools/live/bnb_table.py --json out/bnb.json

Without GPTQModel importable its rows are skipped (the reason says why); bitsandbytes itself is required.
`--device cpu` runs whatever bitsandbytes supports on the CPU (no allocator statistics there). Shape M=64,
K=512, N=128, seeded weights and input shared by both implementations. Per row it records:

* path: the bitsandbytes backend functions (`bitsandbytes/backends/<backend>/ops.py`) and Triton JIT launches
  that ran during one forward, captured with `sys.setprofile`; `vendor` means only the native backend ran.
* naive oracle: FP64 matmul of the exactly decoded weight with the unrounded FP32 input.
* modelling oracle: FP64 model of what the path computes. 4-bit: input and decoded weight rounded to the
  compute dtype. INT8 (LLM.int8(), threshold 0.0 as GPTQModel uses): input rounded to the compute dtype then
  to float16, row-wise absmax-quantized to int8 (outlier columns above the threshold, if any, kept in
  float16), integer matmul, rescaled by the row and weight scales. `within_tol` is
  |out - oracle| <= atol + rtol * |oracle| with rtol = atol = 2e-3, against the modelling oracle.
* decode: NF4/FP4 from the packed uint8 nibbles with the QuantState's 4-bit code table, nested absmax from
  its 8-bit state + offset, INT8 from the int8 weight and its row scales; all in float64, never through
  bitsandbytes' dequantize.
* memory (CUDA only): storage bytes of the module's tensors plus its QuantState's; the allocator delta
  retained after one forward; the additional bytes after 10 more forwards; the peak extra allocation of a
  forward (reset_peak_memory_stats before it). Each row first runs a throwaway instance of the same
  configuration so one-time cuBLAS/cuBLASLt workspaces are not counted against it.

The independent decode, oracles and tolerance check live in `bnb_oracles.py` beside this file (pure torch).

Exit status is non-zero only for a harness error (status `error` in a row, or no CUDA for --device cuda);
a row the library or device cannot build or run is printed as skipped with the reason, never as a pass.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from bnb_oracles import (
    ATOL,
    INT8_THRESHOLD,
    OUT_STD,
    RTOL,
    K,
    M,
    N,
    compare,
    decode_4bit,
    decode_int8,
    make_inputs,
    model_oracle_4bit,
    model_oracle_int8,
    naive_oracle,
)

QUANT_TYPES = ("nf4", "fp4", "int8")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
IMPLS = ("gptqmodel", "bitsandbytes")
REPEATS = 10

METHODS = {
    "path": "sys.setprofile records Python functions run from bitsandbytes/backends/<backend>/ and Triton "
    "JITFunction.run during one forward; 'triton' if any Triton launch or triton backend, else 'vendor'",
    "naive_oracle": "float64 matmul of the independently decoded weight with the unrounded float32 input",
    "model_oracle": "float64 model of the path (see each row's `oracle`); within_tol: |out-ref| <= atol+rtol|ref|",
    "storage_bytes": "distinct untyped-storage bytes of module parameters/buffers and QuantState tensors",
    "retained_bytes": "torch.cuda.memory_allocated() delta from before building to after one forward (module alive)",
    "additional_bytes_after_repeats": f"memory_allocated() growth over {REPEATS} further forwards",
    "peak_extra_bytes": "max_memory_allocated() - memory_allocated() around one forward after reset_peak_memory_stats",
    "warmup": "each row first builds and runs a throwaway instance (one-time workspaces, lazy init)",
}

Module = torch.nn.Module
Forward = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Row:
    """One measured (or skipped) configuration; every field is always present in the JSON."""

    impl: str
    quant_type: str
    dtype: str
    status: str = "skipped"  # pass | fail | skipped | error (harness error: exit status 1)
    reason: str | None = None
    path: str | None = None
    backend_calls: list[str] = field(default_factory=list)
    naive_max_abs_err: float | None = None
    model_max_abs_err: float | None = None
    model_max_tol_ratio: float | None = None
    within_tol: bool | None = None
    oracle: str | None = None
    storage_bytes: int | None = None
    retained_bytes: int | None = None
    additional_bytes_after_repeats: int | None = None
    peak_extra_bytes: int | None = None


ROW_FIELDS = tuple(Row.__dataclass_fields__)


# ---------------------------------------------------------------- builders


def build_gptqmodel(quant_type: str, dtype: torch.dtype, weight: torch.Tensor, device: str) -> Module:
    """GPTQModel's own packing: pack_original() from a float Linear on the CPU, move, post_init()."""
    from gptqmodel.nn_modules.qlinear.bitsandbytes import BitsAndBytesLinear

    bits = 8 if quant_type == "int8" else 4
    module = BitsAndBytesLinear(
        bits=bits,
        group_size=-1,
        sym=True,
        desc_act=False,
        in_features=K,
        out_features=N,
        bias=False,
        dtype=dtype,
        format=None if bits == 8 else quant_type,
        compress_statistics=True,
    )
    linear = torch.nn.Linear(K, N, bias=False)
    with torch.no_grad():
        linear.weight.copy_(weight)
    module.pack_original(linear, None, None)
    module = module.to(device)
    module.post_init()
    return module.eval()


def build_bitsandbytes(quant_type: str, dtype: torch.dtype, weight: torch.Tensor, device: str) -> Module:
    """bitsandbytes alone: Linear4bit (nested statistics) or Linear8bitLt (int8 weights), quantized on .to()."""
    import bitsandbytes as bnb

    module: Module
    if quant_type == "int8":
        module = bnb.nn.Linear8bitLt(K, N, bias=False, has_fp16_weights=False, threshold=INT8_THRESHOLD)
        module.weight = bnb.nn.Int8Params(weight.to(torch.float16), requires_grad=False, has_fp16_weights=False)
    else:
        module = bnb.nn.Linear4bit(
            K, N, bias=False, compute_dtype=dtype, compress_statistics=True, quant_type=quant_type,
            quant_storage=torch.uint8,
        )
        module.weight = bnb.nn.Params4bit(
            weight.to(dtype), requires_grad=False, compress_statistics=True, quant_type=quant_type,
            quant_storage=torch.uint8,
        )
    return module.to(device).eval()


BUILDERS: dict[str, Callable[[str, torch.dtype, torch.Tensor, str], Module]] = {
    "gptqmodel": build_gptqmodel,
    "bitsandbytes": build_bitsandbytes,
}


def quant_tensors(impl: str, module: Module) -> tuple[torch.Tensor, Any]:
    """(packed weight, QuantState) for 4-bit, (int8 weight, SCB) for INT8, as the module holds them."""
    layer: Any = module
    if impl == "gptqmodel":
        if layer.bits == 4:
            return layer.weight, layer._refresh_quant_state()
        return layer.weight, layer.weight_scb
    if hasattr(layer.weight, "quant_state"):
        return layer.weight.data, layer.weight.quant_state
    # Linear8bitLt moves SCB from the parameter into its MatmulLtState on the first forward.
    scb = layer.weight.SCB if layer.weight.SCB is not None else layer.state.SCB
    return layer.weight.data, scb


def state_tensors(state: Any) -> list[torch.Tensor]:
    """Every tensor of a QuantState, nested state included."""
    if state is None or isinstance(state, torch.Tensor):
        return []
    found = [v for v in vars(state).values() if isinstance(v, torch.Tensor)]
    return found + state_tensors(getattr(state, "state2", None))


def storage_bytes(module: Module, state: Any) -> int:
    """Distinct storage bytes of the module's parameters/buffers and its QuantState's tensors."""
    tensors = [*module.parameters(), *module.buffers(), *state_tensors(state)]
    for holder in (getattr(module, "weight", None), getattr(module, "state", None)):
        for extra in ("SCB", "CB"):
            value = getattr(holder, extra, None)
            if isinstance(value, torch.Tensor):
                tensors.append(value)
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


# ---------------------------------------------------------------- path recording


@contextmanager
def record_backend_calls() -> Iterator[list[str]]:
    """Record bitsandbytes backend functions and Triton launches that run in the block, in order."""
    calls: list[str] = []
    marker = os.sep + "bitsandbytes" + os.sep + "backends" + os.sep

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        name = None
        if marker in filename:
            backend = filename.split(marker, 1)[1].split(os.sep, 1)[0]
            name = f"{backend}:{frame.f_code.co_name}@{frame.f_code.co_firstlineno}"
        elif filename.endswith(os.path.join("triton", "runtime", "jit.py")) and frame.f_code.co_name == "run":
            name = "triton:jit.run"
        if name and name not in calls:
            calls.append(name)

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield calls
    finally:
        sys.setprofile(previous)


def classify_path(calls: list[str], device: str) -> str:
    backends = sorted({c.split(":", 1)[0] for c in calls})
    if "triton" in backends:
        return "triton"
    if not backends:
        return "torch only (no bitsandbytes backend op)"
    names = {c.split(":", 1)[1].split("@", 1)[0] for c in calls}
    if "_gemm_4bit_kernel_impl" in names:
        return f"vendor {device}: fused gemm_4bit kernel"
    if "_dequant_linear_fallback" in names:
        return f"vendor {device}: dequantize_4bit + F.linear"
    return "vendor " + "+".join(backends)


# ---------------------------------------------------------------- measurement


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def forward(module: Module, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return module(x)


def measure_memory(row: Row, build: Callable[[], Module], x: torch.Tensor, device: str) -> Module:
    """Build, one forward, REPEATS forwards, one peak-tracked forward; fills the allocator fields."""
    if not device.startswith("cuda"):
        return build()
    gc.collect()
    sync(device)
    base = torch.cuda.memory_allocated()
    module = build()
    del_out(forward(module, x), device)
    row.retained_bytes = torch.cuda.memory_allocated() - base
    for _ in range(REPEATS):
        del_out(forward(module, x), device)
    row.additional_bytes_after_repeats = torch.cuda.memory_allocated() - base - row.retained_bytes
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = forward(module, x)
    sync(device)
    row.peak_extra_bytes = torch.cuda.max_memory_allocated() - before
    del out
    return module


def del_out(out: torch.Tensor, device: str) -> None:
    sync(device)
    del out


def check_accuracy(row: Row, impl: str, module: Module, x_dev: torch.Tensor, x: torch.Tensor) -> None:
    dtype = DTYPES[row.dtype]
    with record_backend_calls() as calls:
        out = forward(module, x_dev)
        sync(str(x_dev.device))
    row.backend_calls = calls
    row.path = classify_path(calls, x_dev.device.type)
    packed, state = quant_tensors(impl, module)
    if row.quant_type == "int8":
        weight64 = decode_int8(packed, state)
        ref = model_oracle_int8(x, packed, state, dtype, INT8_THRESHOLD)
        row.oracle = (
            f"int8 A8W8 model in float64: fp16 input, row-absmax int8 (scaling in fp32), "
            f"threshold {INT8_THRESHOLD}"
        )
    else:
        weight64 = decode_4bit(packed, state)
        ref = model_oracle_4bit(x, weight64, dtype)
        row.oracle = f"4-bit model (input and decoded weight rounded to {row.dtype}) in float64"
    row.naive_max_abs_err = compare(out, naive_oracle(x, weight64))[0]
    row.model_max_abs_err, row.model_max_tol_ratio, row.within_tol = compare(out, ref)
    row.storage_bytes = storage_bytes(module, None if row.quant_type == "int8" else state)
    row.status = "pass" if row.within_tol else "fail"


def run_row(impl: str, quant_type: str, dtype_name: str, weight: torch.Tensor, x: torch.Tensor, device: str) -> Row:
    """Measure one configuration; a library error building or running it makes the row skipped."""
    row = Row(impl=impl, quant_type=quant_type, dtype=dtype_name)
    dtype = DTYPES[dtype_name]
    x_dev = x.to(device=device, dtype=dtype)

    def build() -> Module:
        return BUILDERS[impl](quant_type, dtype, weight, device)

    try:
        del_out(forward(build(), x_dev), device)  # warm-up instance: one-time workspaces, lazy init
        gc.collect()
        module = measure_memory(row, build, x_dev, device)
    except Exception as exc:  # noqa: BLE001 - the device or library cannot run this row
        row.reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        return row
    try:
        check_accuracy(row, impl, module, x_dev, x)
    except Exception as exc:  # noqa: BLE001 - a harness error: reported in the row, exit status 1
        row.status = "error"
        row.reason = f"harness: {type(exc).__name__}: {exc}".splitlines()[0][:200]
    return row


# ---------------------------------------------------------------- output


def environment(device: str) -> dict[str, Any]:
    import bitsandbytes as bnb

    try:
        import gptqmodel

        gptq_version: str | None = getattr(gptqmodel, "__version__", "unknown")
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        gptq_version = f"unavailable: {type(exc).__name__}: {exc}"
    name = torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu"
    return {
        "device": device,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "bitsandbytes": bnb.__version__,
        "gptqmodel": gptq_version,
        "alloc_conf": os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "shape": {"M": M, "K": K, "N": N},
        "rtol": RTOL,
        "atol": ATOL,
        "int8_threshold": INT8_THRESHOLD,
        "methods": METHODS,
    }


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3e}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def markdown(rows: list[Row]) -> str:
    cols = (
        "impl", "quant_type", "dtype", "status", "path", "naive_max_abs_err", "model_max_abs_err",
        "model_max_tol_ratio", "within_tol", "storage_bytes", "retained_bytes",
        "additional_bytes_after_repeats", "peak_extra_bytes",
    )
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        data = asdict(row)
        cells = [fmt(data[c]) for c in cols]
        if row.status in ("skipped", "error"):
            cells[4] = f"{row.status}: {row.reason}"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cuda", help="torch device (default cuda)")
    parser.add_argument("--json", type=Path, help="write the rows and environment here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-std", type=float, default=OUT_STD, help="std of the layer's outputs")
    parser.add_argument("--quant-types", default=",".join(QUANT_TYPES))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--impls", default=",".join(IMPLS))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("harness error: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    try:
        import bitsandbytes  # noqa: F401 - checked before anything else runs
    except Exception as exc:  # noqa: BLE001 - an environment error, not a row
        print(f"harness error: bitsandbytes is not importable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    env = environment(device)
    weight, x = make_inputs(args.seed, args.out_std)
    env["seed"], env["out_std"] = args.seed, args.out_std
    rows = [
        run_row(impl, qt, dt, weight, x, device)
        for qt in args.quant_types.split(",")
        for dt in args.dtypes.split(",")
        for impl in args.impls.split(",")
    ]
    env["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(env, indent=1))
    print(markdown(rows))
    for row in rows:
        print(f"{row.impl}/{row.quant_type}/{row.dtype}: {row.status} calls={row.backend_calls} oracle={row.oracle}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=1))
    return 1 if any(row.status == "error" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
