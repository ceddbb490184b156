"""A child reused for the next scenario of the same host answers exactly as a fresh fork would.

The kit's fork server (devsim_subject_kit.server) parks a child after `end` and resumes it for a later scenario with the identical host, but only when
Subject.reusable() finds GPTQModel's state (every module and class namespace and the containers they hold, by
identity), the environment, the imported modules, the thread count and torch's switches as the scenario found
them. This runs one stream of scenarios, with every stateful action repeated on the same hosts and interleaved
hosts, through a subject with reuse and one with a fresh fork per scenario (DEVSIM_SUBJECT_REUSE=0), and
requires identical answers, traces included. (The whole corpus, recorded from devsim, compares the same way:
README.md, "Reuse".)
"""

from __future__ import annotations

import pytest
from fakedevsim import AMD_MIXED, CPU, H200X2, R9700X2, Driver, fam, o, s

STREAM = [
    (R9700X2, [{"action": "set_device", "ordinal": 1},
               {"action": "move", "kernel": "gptq_torch", "device": s("cuda")}]),
    (R9700X2, [{"action": "normalize", "device": s("cuda")},
               {"action": "move", "kernel": "gptq_torch", "device": s("cuda")}]),
    (R9700X2, [{"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:0")},
               {"action": "validate", "kernel": "gptq_machete", "device": s("cuda:1")}]),
    (R9700X2, [{"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:0")},
               {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")}]),
    (H200X2, [{"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:1")},
              {"action": "validate", "kernel": "gptq_swordfish", "device": o(0)}]),
    (R9700X2, [{"action": "lock", "scope": fam("rocm"), "mode": "write"}]),
    (R9700X2, [{"action": "lock", "scope": s("cuda:1"), "mode": "read"},
               {"action": "select", "method": "awq", "bits": 4, "device": s("cuda:1")}]),
    (H200X2, [{"action": "validate", "kernel": "gptq_machete", "device": s("cuda:1")},
              {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")}]),
    (H200X2, [{"action": "set_device", "ordinal": 1},
              {"action": "resolve", "device": s("cuda")}]),
    (H200X2, [{"action": "resolve", "device": s("cuda")},
              {"action": "validate", "kernel": "bitsandbytes", "device": s("cuda")}]),
    (AMD_MIXED, [{"action": "validate", "kernel": "bitsandbytes", "device": s("cuda:1")},
                 {"action": "move", "kernel": "awq_gemm", "device": s("cuda:1")}]),
    (AMD_MIXED, [{"action": "select", "method": "gptq", "bits": 4, "device": fam("rocm")},
                 {"action": "validate", "kernel": "exl3_exllama_v3", "device": s("cuda")}]),
    (CPU, [{"action": "validate", "kernel": "gptq_marlin", "device": s("cpu")},
           {"action": "select", "method": "gptq", "bits": 4, "device": s("cpu")}]),
    (CPU, [{"action": "select", "method": "gptq", "bits": 4, "device": s("cpu")},
           {"action": "move", "kernel": "gptq_torch", "device": s("cpu")}]),
    (AMD_MIXED, [{"action": "normalize", "device": s("cuda:1")},
                 {"action": "select", "method": "gptq", "bits": 4, "device": fam("rocm")}]),
    # the simulated extension loader marks an extension loaded: a reused child must load it again (and say so)
    (H200X2, [{"action": "validate", "kernel": "gptq_exllama_v2", "device": s("cuda:0")}]),
    (H200X2, [{"action": "validate", "kernel": "gptq_exllama_v2", "device": s("cuda:0")}]),
    # a simulated warmup runs GPTQModel's forward on fake tensors; the answers must not depend on reuse
    (R9700X2, [{"action": "warmup", "kernel": "gptq_torch", "device": s("cuda:1")}]),
    (R9700X2, [{"action": "warmup", "kernel": "gptq_torch", "device": s("cuda:1")}]),
    # QQQ's forward calls a native op the simulated extension load defines as a checked no-op (nativeops): a
    # reused child must find it undefined again, load the extension again and define it again
    (H200X2, [{"action": "warmup", "kernel": "qqq", "device": s("cuda:1")}]),
    (H200X2, [{"action": "warmup", "kernel": "qqq", "device": s("cuda:1")}]),
    # AWQ Triton's forward fills its launch-plan memos (reading the device's properties to plan), and GGUF's CPU
    # kernel builds its GGML bridge on first use: restored ([[reset]]), the next scenario plans and builds again
    (R9700X2, [{"action": "warmup", "kernel": "awq_gemm_triton", "device": s("cuda:1")}]),
    (R9700X2, [{"action": "warmup", "kernel": "awq_gemm_triton", "device": s("cuda:1")},
               {"action": "validate", "kernel": "gguf_cpp_cpu", "device": s("cpu")}]),
    (R9700X2, [{"action": "validate", "kernel": "gguf_cpp_cpu", "device": s("cpu")},
               {"action": "warmup", "kernel": "gguf_cpp_cpu", "device": s("cpu")}]),
    (R9700X2, [{"action": "warmup", "kernel": "gguf_cpp_cpu", "device": s("cpu")}]),
]


def answers(env: dict, reuse: str) -> tuple[list, str]:
    """Every answer of the stream, and the fork server's closing count on stderr."""
    driver = Driver({**env, "DEVSIM_SUBJECT_REUSE": reuse})
    driver.hello(protocol=2)
    try:
        got = [driver.scenario(host, steps, name=f"reuse/{i}.toml") for i, (host, steps) in enumerate(STREAM)]
    finally:
        code = driver.close()
        assert code == 0, driver.stderr_text()[-4000:]
    counts = [line for line in driver.stderr_text().splitlines() if "forked child(ren)" in line]
    return got, counts[-1] if counts else ""


@pytest.mark.parametrize("overlay", [None, "seedfix"])
def test_a_reused_child_answers_as_a_fresh_fork(env, overlay):
    env = {**env, **({"DEVSIM_GPTQMODEL_OVERLAY": overlay} if overlay else {})}
    fresh, fresh_counts = answers(env, "0")
    reused, reused_counts = answers(env, "1")
    for (host, steps), a, b in zip(STREAM, fresh, reused):
        assert a == b, f"{host['torch']} {steps}: fresh fork {a} != reused child {b}"
    assert f"{len(STREAM)} scenario(s): {len(STREAM)} forked child(ren), 0 run in a reused one" in fresh_counts
    # one child per host (4): a lock scenario's device pool is shut down and its threads have ended before the
    # reuse check, so its child is reused too.
    # The CPU validation's warn-once message, the first simulated warmup's per-device dtype-support memo, AWQ
    # Triton's plan memos and GGUF's bridge fill tables and globals constants.toml restores ([[reset]]), and the
    # warmup's lazily imported modules are preloaded ([[preload]]): those children are reused, and answer as the
    # fresh forks above.
    assert f"{len(STREAM)} scenario(s): 4 forked child(ren), {len(STREAM) - 4} run in a reused one" in reused_counts, (
        reused_counts
    )
    def traces(kernel: str) -> list:
        return [a["answers"][0]["trace"] for (_, steps), a in zip(STREAM, reused) if steps[0].get("kernel") == kernel]

    for kernel in ("gptq_exllama_v2", "qqq"):
        assert all(any(e["event"] == "extension_load" for e in trace) for trace in traces(kernel)), kernel
    qqq = [a["answers"][0] for (_, steps), a in zip(STREAM, reused) if steps[0].get("kernel") == "qqq"]
    assert [answer.get("ran_on") for answer in qqq] == [1, 1], qqq
