"""Measures the subject: import, per-step cost (in the child, and over the protocol), per-scenario overhead.

    python tools/bench.py [--steps N] [--scenarios N]

In-child numbers time Subject.step() itself (GPTQModel's call plus the subject's recording) in a forked
child on a 2-GPU HIP host; "cold" clears GPTQModel's validation caches before every call, "warm" repeats the
same call (GPTQModel's validate_quant_linear caches verdicts per class/arguments/device descriptor).
Round trips time a step message to its answer through a real subject process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import MISSING, subject_env
from fakedevsim import R9700X2, Driver, s

STEPS = {
    "normalize cuda:1": {"action": "normalize", "device": s("cuda:1")},
    "validate gptq_torch cuda:1": {"action": "validate", "kernel": "gptq_torch", "device": s("cuda:1")},
    "validate gptq_marlin cuda:1": {"action": "validate", "kernel": "gptq_marlin", "device": s("cuda:1")},
    "select gptq 4-bit cuda": {"action": "select", "method": "gptq", "bits": 4, "device": s("cuda")},
}


def fmt(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e6:8.1f} us  (p90 {sorted(values)[int(len(values) * 0.9)] * 1e6:8.1f} us, n={len(values)})"


def in_child(n: int) -> None:
    """Forks a child of a loaded subject and times step() there (results come back over a pipe)."""
    env = subject_env()
    code = f"""
import gc, json, os, sys, time
sys.path[:0] = {env['PYTHONPATH'].split(os.pathsep)!r}
from devsim_subject_kit.server import prepare_environment
from devsim_subject_kit.protocol import claim_stdout
prepare_environment({{"BUILD_CUDA_EXT": "0"}}); out = claim_stdout()
t0 = time.perf_counter()
from devsim_subject_gptqmodel.subject import Subject
from devsim_subject_kit import Host
subject = Subject(); subject.load()
load_s = time.perf_counter() - t0
gc.collect(); gc.freeze()
steps = {json.dumps(STEPS)!r}
steps = json.loads(steps)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        subject.enter(Host.from_message(json.loads({json.dumps(json.dumps(R9700X2))})))
        result = {{"load_s": load_s}}
        for label, step in steps.items():
            msg = {{"type": "step", "scenario": "bench", "number": 1, **step}}
            for mode in ("cold", "warm"):
                times = []
                for _ in range({n}):
                    if mode == "cold":
                        subject.clear_caches()
                    t = time.perf_counter(); answer = subject.step(msg); times.append(time.perf_counter() - t)
                result[label + " " + mode] = times
        os.write(w, json.dumps(result).encode())
    finally:
        os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 1 << 20):
    data += chunk
os.waitpid(pid, 0)
out.write(data)
"""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=600, check=False)
    if proc.returncode:
        sys.exit(proc.stderr.decode()[-3000:])
    if not proc.stdout:
        sys.exit("the forked child answered nothing:\n" + proc.stderr.decode()[-3000:])
    result = json.loads(proc.stdout)
    print(f"Subject.load() (patch torch, import GPTQModel, kernel map): {result.pop('load_s'):.2f} s")
    for label, times in result.items():
        print(f"  in child  {label:38} {fmt(times)}")


def protocol(n: int, scenarios: int) -> None:
    driver = Driver(subject_env())
    start = time.perf_counter()
    driver.hello()
    print(f"process start to handshake: {time.perf_counter() - start:.2f} s")
    for label, step in STEPS.items():
        driver.send({"type": "scenario", "name": "bench", "host": R9700X2})
        driver.read()
        times = []
        for number in range(1, n + 1):
            t = time.perf_counter()
            driver.send({"type": "step", "scenario": "bench", "number": number, **step})
            driver.read()
            times.append(time.perf_counter() - t)
        driver.send({"type": "end", "scenario": "bench"})
        driver.read()
        print(f"  protocol  {label:38} {fmt(times)}")
    ready = []
    for i in range(scenarios):
        t = time.perf_counter()
        driver.scenario(R9700X2, [], name=f"empty-{i}")
        ready.append(time.perf_counter() - t)
    print(f"  per scenario (fork, enter host, ready, end, done){'':6} {fmt(ready)}")
    driver.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--scenarios", type=int, default=30)
    args = parser.parse_args()
    if MISSING:
        print(MISSING, file=sys.stderr)
        return 2
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    in_child(args.steps)
    protocol(args.steps, args.scenarios)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
