"""A session child that dies mid-test (an abort, `os._exit`, a signal) loses nothing: the test it died in is
crashed with how it died and its last output, every other result is kept, and a fresh child runs the rest."""

from __future__ import annotations

import json
import os
from xml.etree import ElementTree

import pytest
from conftest import SRC, devsim_binary
from devsim_subject_kit.junitcases import names
from devsim_subject_kit.sessionrun import cause
from devsim_subject_kit.stream import ResultStream, read_stream
from test_pytest_plugin import LOAD

pytest.importorskip("torch")
DEVSIM = devsim_binary()
needs_devsim = pytest.mark.skipif(DEVSIM is None, reason="no devsim binary: cargo build, or set DEVSIM")

DYING = """
import os, signal, sys

def test_a():
    pass

def test_abort():
    os.abort()

def test_b():
    pass

def test_exit():
    print("LAST WORDS BEFORE EXIT", flush=True)
    os._exit(3)

def test_c():
    pass

def test_kill():
    os.kill(os.getpid(), signal.SIGKILL)

def test_segv():
    import ctypes
    ctypes.string_at(0)

def test_d():
    assert False, "a plain failure"
"""


def session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    pytester.makepyfile(test_inner=DYING)
    return pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", "-rs", f"--devsim={DEVSIM}",
                                         "--devsim-host", "cpu", "--devsim-report", "report.json", *args)


def outcomes(pytester: pytest.Pytester) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    report = json.loads((pytester.path / "report.json").read_text())
    return report, {t["nodeid"].split("::")[1].removesuffix("[devsim:cpu]"): t for t in report["tests"]}


@needs_devsim
def test_a_child_killed_mid_test_keeps_every_result_and_runs_the_rest(pytester: pytest.Pytester) -> None:
    result = session(pytester, "-s", "--junitxml", "junit.xml")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out + result.stderr.str()
    report, tests = outcomes(pytester)
    assert {n: t["outcome"] for n, t in tests.items()} == {
        "test_a": "passed", "test_abort": "crashed", "test_b": "passed", "test_exit": "crashed", "test_c": "passed",
        "test_kill": "crashed", "test_segv": "crashed", "test_d": "failed",
    }
    assert report["restarts"] == {"cpu": 4} and report["unrun"] == {} and report["exit_codes"] == {"cpu": 1}
    assert tests["test_abort"]["reason"] == "the session child died while running it (signal 6 (SIGABRT))"
    assert any("Fatal Python error: Aborted" in line for line in tests["test_abort"]["output"])
    assert tests["test_exit"]["reason"] == "the session child died while running it (exit status 3)"
    assert any(line.endswith("LAST WORDS BEFORE EXIT") for line in tests["test_exit"]["output"])
    assert tests["test_kill"]["reason"] == "the session child died while running it (signal 9 (SIGKILL))"
    assert tests["test_segv"]["reason"] == "the session child died while running it (signal 11 (SIGSEGV))"
    assert any("Fatal Python error: Segmentation fault" in line for line in tests["test_segv"]["output"])
    result.stdout.fnmatch_lines([
        ("devsim: the session child on cpu died in test_inner.py::test_abort[[]devsim:cpu[]] (signal 6 (SIGABRT)); "
         "6 test(s) left"),
        "devsim: restart 1 of at most 10: a fresh session child on cpu resumes from the next test",
        "*test_inner.py::test_exit*",
        "devsim: restart 2 of at most 10*",
        "devsim: restart 3 of at most 10*",
        "devsim: restart 4 of at most 10*",
        "*1 failed, 7 deselected*",
        "devsim: cpu: 4 crashed, 1 failed, 3 passed; 4 restart(s)",
        "devsim: sessions done (cpu: exit 1 after 4 restart(s))",
    ])
    # the JUnit file has every test: the children that died wrote none, their parts come from the stream
    root = ElementTree.parse(pytester.path / "junit.xml").getroot()
    assert {p.get("value") for p in root.iter("property") if p.get("name") == "devsim_restarts"} == {"4"}
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert sorted(cases) == sorted(f"{n}[devsim:cpu]" for n in tests)
    assert cases["test_kill[devsim:cpu]"].find("failure").get("message").endswith("(signal 9 (SIGKILL))")
    assert cases["test_d[devsim:cpu]"].find("failure") is not None
    assert cases["test_c[devsim:cpu]"].find("failure") is None


@needs_devsim
def test_the_restart_limit_leaves_the_rest_unrun_and_says_so(pytester: pytest.Pytester) -> None:
    result = session(pytester, "--devsim-max-restarts", "1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "devsim: restart 1 of at most 1*",
        "devsim: the session on cpu reached the restart limit (1, --devsim-max-restarts): 4 test(s) not run",
        "devsim: cpu: 2 crashed, 2 passed; 1 restart(s); 4 not run (restart limit)",
    ])
    report, tests = outcomes(pytester)
    assert sorted(tests) == ["test_a", "test_abort", "test_b", "test_exit"]
    assert report["unrun"] == {"cpu": [f"test_inner.py::{n}[devsim:cpu]" for n in ("test_c", "test_kill", "test_segv",
                                                                                   "test_d")]}


@needs_devsim
def test_with_x_a_crash_stops_the_session(pytester: pytest.Pytester) -> None:
    result = session(pytester, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _, tests = outcomes(pytester)
    assert {n: t["outcome"] for n, t in tests.items()} == {"test_a": "passed", "test_abort": "crashed"}


@needs_devsim
def test_a_hang_the_timeout_cannot_interrupt_is_ended_and_the_session_resumes(pytester: pytest.Pytester) -> None:
    """The main thread blocks SIGALRM, so only faulthandler's backstop (timeout + 30 s) ends the child."""
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    pytester.makepyfile(test_inner="""
import signal, time

def test_hang():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(600)

def test_after():
    pass
""")
    result = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", f"--devsim={DEVSIM}", "--devsim-host",
                                           "cpu", "--devsim-timeout", "1", "--devsim-report", "report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str() + result.stderr.str()
    _, tests = outcomes(pytester)
    assert tests["test_after"]["outcome"] == "passed" and tests["test_hang"]["outcome"] == "crashed"
    assert tests["test_hang"]["reason"] == ("the session child was ended after the test ran past --devsim-timeout "
                                            "and never got back to Python (exit status 1)")
    assert any("in test_hang" in line for line in tests["test_hang"]["output"])


def test_the_stream_reads_back_what_was_written_and_skips_a_cut_line(tmp_path) -> None:
    path = tmp_path / "stream.jsonl"
    stream = ResultStream(str(path))
    stream.write("collected", nodeids=["t::a", "t::b", "t::c"])
    stream.write("start", nodeid="t::a")
    stream.write("result", nodeid="t::a", entry={"nodeid": "t::a", "outcome": "passed"})
    stream.write("start", nodeid="t::b")
    stream.write("refused", nodeid="t::b", reason="needs a real GPU: x")
    stream.write("refused", nodeid="t::b", reason="needs a real GPU: y")
    with path.open("a") as cut:
        cut.write('{"event": "result", "nodeid": "t::b", "ent')  # the child died writing it
    read = read_stream(path)
    assert read.collected == ["t::a", "t::b", "t::c"] and not read.finished
    assert read.results == [{"nodeid": "t::a", "outcome": "passed"}]
    assert list(read.running) == ["t::b"] and read.refused == {"t::b": "needs a real GPU: x"}
    assert read_stream(tmp_path / "none.jsonl").results == []


def test_how_a_child_ended_and_junit_names() -> None:
    assert cause(-9) == "signal 9 (SIGKILL)" and cause(3) == "exit status 3" and cause(-200) == "signal 200"
    assert names("tests/test_x.py::C::t[devsim:h200]") == ("tests.test_x.C", "t[devsim:h200]")
    assert names("test_x.py::t") == ("test_x", "t")
