"""Live checkpoints of other formats (liveformats.py): AWQ and FP8 weights packed by GPTQModel's own reference
packers, loaded into a kernel's module and run for real on this machine's CPU, judged by the FP64 oracle.

The bound: the oracle is exact (float64 on weights that are exact in float64), so the error is float16's own
rounding: the output rounded to float16 (half an ulp, 2**-10 ~ 9.8e-4 for |y| in [2, 4), where this shape's
largest outputs are) plus, for AWQ, each dequantized weight `scale * (code - zero)` rounded to float16 (relative
2**-11 at most, random in sign over K = 512 terms; FP8's codes over power-of-two scales are exact in float16).
Together they stay under 2e-3 at this shape, the seed's atol (measured on this CPU: AWQ 1.36e-3, FP8 4.6e-4); a
checkpoint whose zero points are one off (AWQ) or whose scales are doubled (FP8) shifts outputs by whole scales,
far more than that (4.2 and 0.59).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fakedevsim import CPU, Driver, s

BOUND = 2e-3


@pytest.fixture(scope="module")
def live(env):
    d = Driver(env)
    d.hello(protocol=2, live=True)
    yield d
    assert d.close() == 0, d.stderr_text()[-4000:]


@pytest.mark.parametrize("kernel", ["awq_torch", "fp8_torch"])
def test_a_cpu_warmup_of_another_format_runs_within_the_oracle_tolerance(live, kernel):
    answer = live.step(CPU, {"action": "warmup", "kernel": kernel, "device": s("cpu")})
    assert answer["type"] == "observed", answer
    assert answer["ok"] is True and answer["ran_on"] == "cpu", answer
    numerics = answer["numerics"]
    assert numerics["within"] is True, numerics
    assert 0 < numerics["max_abs_error"] < BOUND, numerics  # fp16 output against float64: never exactly zero
    assert kernel.split("_")[0].upper() in numerics["shape"], numerics


def test_a_kernel_whose_format_has_no_builder_answers_unsupported(live):
    # GGUF: the subject builds no GGUF checkpoint
    answer = live.step(CPU, {"action": "warmup", "kernel": "gguf_torch", "device": s("cpu")})
    assert answer["type"] == "unsupported", answer
    assert "no weight builder" in answer["reason"] and "GGUFTorchLinear" in answer["reason"], answer


# In a child process: GPTQModel imported on this machine's real torch, apart from the tests that patch torch.
WRONG = """
import dataclasses, json, torch
from devsim_subject_gptqmodel import liveformats, livewarmup
from gptqmodel.nn_modules.qlinear.fp8 import TorchFP8Linear
from gptqmodel.nn_modules.qlinear.torch_awq import AwqTorchLinear

cpu = torch.device("cpu")
out = {}

awq = liveformats.FORMATS["awq"]
weights, state = awq.checkpoint(AwqTorchLinear, 4)
drawn = awq.draw(4)
# the same codes and scales, zero points one off (mod 16): packed by the same packer, judged by the right oracle
off = dataclasses.replace(drawn, zeros=(drawn.zeros + 1) % 16)
wrong = awq.pack(AwqTorchLinear, off, 4)
for name, checkpoint in (("awq", state), ("awq_zeros_off_by_one", wrong)):
    forward = livewarmup.run(awq.load(AwqTorchLinear, checkpoint, 4), weights, cpu)
    out[name] = [forward.max_abs_error, forward.within]

fp8 = liveformats.FORMATS["fp8"]
weights, state = fp8.checkpoint(TorchFP8Linear, 8)
drawn = fp8.draw(8)
out["fp8_codes_stored_exactly"] = bool(torch.equal(state["weight"].view(torch.uint8), drawn.codes.view(torch.uint8)))
wrong = {**state, "weight_scale_inv": state["weight_scale_inv"] * 2}
for name, checkpoint in (("fp8", state), ("fp8_scales_doubled", wrong)):
    forward = livewarmup.run(fp8.load(TorchFP8Linear, checkpoint, 8), weights, cpu)
    out[name] = [forward.max_abs_error, forward.within]
try:
    fp8.draw(4)
except ValueError as exc:
    out["fp8_4_bits"] = str(exc)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def judged(env):
    run = subprocess.run([sys.executable, "-c", WRONG], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("good, bad", [("awq", "awq_zeros_off_by_one"), ("fp8", "fp8_scales_doubled")])
def test_the_oracle_tells_a_wrong_checkpoint_from_the_right_one(judged, good, bad):
    error, within = judged[good]
    assert within is True and 0 < error < BOUND, judged
    error, within = judged[bad]
    assert within is False and error > 10 * BOUND, judged


def test_gptqmodels_fp8_quantizer_stores_the_drawn_codes(judged):
    """The draw pins each row's maximum at ±448 and its scale at a power of two: nothing is rounded away."""
    assert judged["fp8_codes_stored_exactly"] is True, judged
    assert "FP8 weights are 8 bits" in judged["fp8_4_bits"], judged
