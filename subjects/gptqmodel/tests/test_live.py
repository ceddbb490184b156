"""Live mode (hello says `live`): the real torch of this machine, its calls wrapped, never faked.

These run on any machine: a CPU scenario runs GPTQModel's portable kernel for real and is judged by the FP64
oracle; a GPU scenario on a machine whose torch sees no such GPU is refused at the scenario, naming what torch
sees (devsim then fails it: a live run that cannot reach the GPU never passes). On a GPU machine the same code
runs the corpus (`devsim run --live --subject`, subjects/gptqmodel/README.md).
"""

from __future__ import annotations

import pytest
import torch
from fakedevsim import CPU, Driver, s

H200 = {"arch": "sm_90", "name": "NVIDIA H200", "smem_optin": 232448, "uuid": "GPU-1"}
CUDA_HOST = {"torch": "cuda", "gpus": [H200], "foreign_gpus": [], "env": {}, "visible": [0], "current": 0}


@pytest.fixture(scope="module")
def live(env):
    d = Driver(env)
    d.hello(protocol=2, live=True)
    yield d
    assert d.close() == 0, d.stderr_text()[-4000:]


def test_the_handshake_says_live_only_when_asked(live, env):
    assert live.handshake is not None and live.handshake["live"] is True
    assert "retained_bytes" in live.handshake["observes"]["warmup"]
    simulated = Driver(env)
    try:
        assert "live" not in simulated.hello(protocol=2)
    finally:
        assert simulated.close() == 0


def test_a_cpu_warmup_runs_the_real_kernel_within_the_oracle_tolerance(live):
    answer = live.step(CPU, {"action": "warmup", "kernel": "gptq_torch", "device": s("cpu")})
    assert answer["type"] == "observed", answer
    assert answer["ok"] is True and answer["ran_on"] == "cpu", answer
    numerics = answer["numerics"]
    assert numerics["within"] is True and numerics["rtol"] == numerics["atol"] == 2e-3
    assert 0 < numerics["max_abs_error"] < 2e-3  # fp16 output against float64: never exactly zero
    assert answer["retained_bytes"] == 0  # no GPU here: nothing can stay allocated on one


def test_a_kernel_without_a_weight_builder_is_unsupported_not_refused(live):
    # GGUF: the subject builds no GGUF checkpoint
    answer = live.step(CPU, {"action": "warmup", "kernel": "gguf_torch", "device": s("cpu")})
    assert answer["type"] == "unsupported" and "no weight builder" in answer["reason"], answer


WRAPPED = """
import json, torch
from devsim_subject_kit.livetorch import LiveTorch
own = torch.cuda.is_available
host = LiveTorch().install()
with host.recorder.capture() as trace:
    answer = torch.cuda.is_available()
print(json.dumps({"same": answer == own(), "wrapped": torch.cuda.is_available.__wrapped__ is own, "trace": trace}))
"""


def test_trace_events_come_from_the_wrapped_real_calls(env):
    """A wrapper calls torch's own function and answers what it answered; the call is recorded."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", WRAPPED], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"same": True, "wrapped": True, "trace": [{"event": "device_count", "detail": "is_available"}]}


def test_a_gpu_scenario_this_torch_cannot_reach_is_refused_at_the_scenario(live):
    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees a GPU")
    result = live.scenario(CUDA_HOST, [{"action": "normalize", "device": s("cuda")}])
    assert result["start"]["type"] == "unsupported", result
    assert "torch sees 0 GPU(s), the scenario's host has 1" in result["start"]["reason"]


def test_a_repeated_step_outside_a_live_run_is_a_protocol_error(env):
    d = Driver(env)
    d.hello(protocol=2)
    d.send({"type": "scenario", "name": "r.toml", "host": CPU})
    assert d.read()["type"] == "ready"
    d.send({"type": "step", "scenario": "r.toml", "number": 1, "action": "normalize", "device": s("cpu"), "repeat": 3})
    assert d.close() != 0
    assert "a repeated step outside a live run" in d.stderr_text()
