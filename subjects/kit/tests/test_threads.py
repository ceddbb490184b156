"""Every thread on the simulated host: the threads a project starts (at import, in a pool, in a fixture) get
CPU-backed tensors, device ops, guards and a current device of their own that starts at 0; a GPU-only call in a
worker is a named skip of the test, even when the worker's pool ends the process over it."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import SRC, devsim_binary
from test_pytest_plugin import LOAD

torch = pytest.importorskip("torch")

from devsim_subject_kit import Host
from devsim_subject_kit.cpubacked import CpuBackedGpus
from devsim_subject_kit.gpuonly import GpuOnlyCall
from devsim_subject_kit.simtorch import SimulatedTorch
from devsim_subject_kit.testing import H200X2, R9700X2
from devsim_subject_kit.threads import AllThreads

DEVSIM = devsim_binary()
needs_devsim = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")
RUNTIME = SimulatedTorch()


@pytest.fixture(params=[H200X2, R9700X2], ids=["h200x2", "r9700x2"])
def two_gpus(request: pytest.FixtureRequest) -> Any:
    RUNTIME.install(Host.from_message(request.param))
    threads = AllThreads(CpuBackedGpus, lambda exc: None).install()
    yield RUNTIME
    threads.uninstall()
    RUNTIME.uninstall()


def in_thread(work: Any) -> Any:
    """What `work()` returns (or raises), run in a new `threading.Thread`."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_each_thread_has_its_own_current_device_that_starts_at_0(two_gpus: SimulatedTorch) -> None:
    torch.cuda.set_device(1)
    assert in_thread(torch.cuda.current_device) == 0  # a new thread is on device 0, as on CUDA and HIP

    def switch() -> tuple[int, int, int]:
        with torch.cuda.device(1):
            inside = torch.cuda.current_device()
        after = torch.cuda.current_device()
        torch.cuda.set_device(1)
        return inside, after, torch.cuda.current_device()

    torch.cuda.set_device(0)
    assert in_thread(switch) == (1, 0, 1)  # the guard restores the thread's own device
    assert torch.cuda.current_device() == 0  # the thread's set_device left the main thread's alone
    # a thread the system gives an ended thread's id starts at 0 too, not on the device that thread set
    assert [in_thread(switch)[1] for _ in range(20)] == [0] * 20


def test_a_thread_and_a_pool_put_tensors_on_the_simulated_gpus(two_gpus: SimulatedTorch) -> None:
    def total(ordinal: int) -> tuple[str, float]:
        x = torch.arange(4.0, device=f"cuda:{ordinal}") + ordinal
        return str(x.device), x.sum().item()

    def indexless() -> tuple[str, float]:  # the thread's current device, 0
        x = torch.ones(3, device="cuda").to(torch.float16)
        return str(x.device), x.sum().item()

    assert in_thread(indexless) == ("cuda:0", 3.0)
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(total, [0, 1])) == [("cuda:0", 6.0), ("cuda:1", 10.0)]
    with pytest.raises(GpuOnlyCall, match="torch.cuda._sleep is a GPU-only native call"):
        in_thread(lambda: torch.cuda._sleep(100))


INNER = """
import os, queue, threading
from concurrent.futures import ThreadPoolExecutor

import pytest, torch

JOBS, DONE = queue.Queue(), queue.Queue()

def serve():  # a worker the project starts at import
    while True:
        job = JOBS.get()
        DONE.put(job())

threading.Thread(target=serve, daemon=True).start()

def gpu_sum(values):  # the project's function
    return torch.tensor(values, device="cuda").sum().item()

@pytest.fixture
def worker():
    pool = ThreadPoolExecutor(1)
    yield pool.submit(lambda: (str(torch.ones(2, device="cuda").device), torch.cuda.current_device())).result()
    pool.shutdown()

def test_sum_in_a_thread():
    out = []
    thread = threading.Thread(target=lambda: out.append(gpu_sum([1.0, 2.0, 3.0])))
    thread.start()
    thread.join()
    assert out == [6.0]

def test_sum_in_a_pool_on_each_gpu():
    def work(i):
        with torch.cuda.device(i):
            return torch.cuda.current_device(), gpu_sum([float(i)] * 4)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(work, range(torch.cuda.device_count())))
    assert got == [(i, 4.0 * i) for i in range(torch.cuda.device_count())]

def test_the_import_time_thread(): 
    JOBS.put(lambda: gpu_sum([2.0, 2.0]))
    assert DONE.get(timeout=60) == 4.0

def test_a_fixture_thread(worker):
    assert worker == ("cuda:0", 0)

def test_sleep_in_a_pool_worker():
    with ThreadPoolExecutor(1) as pool:
        pool.submit(torch.cuda._sleep, 1000).result()

def test_sleep_in_a_worker_whose_pool_aborts():
    def work():
        try:
            torch.cuda._sleep(1000)
        except Exception:
            os.abort()  # as GPTQModel's thread pool ends the process when a worker raises
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()

def test_after_the_abort():
    assert gpu_sum([1.0]) == 1.0
"""

SLEEP = "needs a real GPU: torch.cuda._sleep is a GPU-only native call that the simulated host does not run"


@needs_devsim
def test_project_threads_run_on_each_simulated_host(pytester: pytest.Pytester) -> None:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", "-rs", f"--devsim={DEVSIM}",
                                           "--devsim-host", "h200,r9700x2", "--devsim-report", "report.json")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, out
    report = json.loads((pytester.path / "report.json").read_text())
    got = {(t["nodeid"].split("::")[1].split("[")[0], t["profile"]): (t["outcome"], t.get("reason", ""))
           for t in report["tests"]}
    for profile in ("h200", "r9700x2"):
        for test in ("test_sum_in_a_thread", "test_sum_in_a_pool_on_each_gpu", "test_the_import_time_thread",
                     "test_a_fixture_thread", "test_after_the_abort"):
            assert got[(test, profile)] == ("passed", ""), (test, profile, out)
        assert got[("test_sleep_in_a_pool_worker", profile)] == ("skipped", SLEEP)
        outcome, reason = got[("test_sleep_in_a_worker_whose_pool_aborts", profile)]
        died = "the session child died while running it (signal 6 (SIGABRT))"
        assert (outcome, reason) == ("skipped", f"{SLEEP}; {died}")
    assert report["restarts"] == {"h200": 1, "r9700x2": 1} and "CUDA driver" not in out and "NVIDIA driver" not in out
