"""One trigger on one side: a pytest session on its simulated hosts, run by this interpreter, with a timeout.

`repro` and `import` run a generated test file in a work folder of the cache; `suite` runs the project's own
test files, unmodified, from the side's tree (its conftest and ini apply). The session writes a
`--devsim-report`; a repro's test writes its observation (`{"returned", "raised", "device", "trace"}`) per host.
A timeout kills the whole process group: that trigger's error, never the run's.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import devsim_subject_kit

from .case import Case, Trigger
from .install import Installed
from .stubs import PLUGIN as STUBS_PLUGIN

#: The environment variable naming the folder a repro's generated test writes its observations to.
OBSERVATION_ENV = "DEVSIM_BUGS_OBSERVATIONS"
_KIT = Path(devsim_subject_kit.__file__).resolve().parents[1]
_TAIL = 40

_REPRO_TEST = '''"""devsim real-bug runner: calls the repro script's observe() and records what it saw (generated)."""
import importlib.util
import json
import os
import traceback


def _describe(value):
    try:
        json.dumps(value)
        returned = value
    except (TypeError, ValueError):
        returned = repr(value)
    device = getattr(value, "device", None)
    return returned, str(device) if device is not None else str(value)


def test_repro(devsim_host, devsim_trace):
    observation = {{"returned": None, "returned_repr": None, "raised": None, "raised_types": [], "device": None}}
    try:
        spec = importlib.util.spec_from_file_location("devsim_bug_repro", {script!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        value = module.observe()
        observation["returned"], observation["device"] = _describe(value)
        observation["returned_repr"] = repr(value)
    except BaseException as exc:  # the observation is the exception
        observation["raised"] = f"{{type(exc).__name__}}: {{exc}}"
        observation["raised_types"] = [t.__name__ for t in type(exc).__mro__]
        observation["traceback"] = traceback.format_exc().splitlines()[-12:]
    observation["trace"] = [dict(e) for e in devsim_trace]
    folder = os.environ[{env!r}]
    with open(os.path.join(folder, devsim_host.profile + ".json"), "w") as out:
        json.dump(observation, out, default=repr)
'''

_IMPORT_TEST = '''"""devsim real-bug runner: imports the project's modules on the simulated host (generated)."""
import importlib

import pytest


@pytest.mark.parametrize("module", {modules!r})
def test_import(module):
    importlib.import_module(module)
'''


@dataclass
class Session:
    """What a trigger's pytest session came to: its exit code (None: it did not end), the report, output."""

    code: int | None
    seconds: float
    report: dict[str, Any] | None
    junit: Path
    observations: dict[str, dict[str, Any]] = field(default_factory=dict)
    tail: list[str] = field(default_factory=list)
    timed_out: bool = False


@functools.cache
def sanitizer_available() -> bool:
    """Whether this kit's pytest plugin accepts `--devsim-sanitize` (the sanitizer of issue 54)."""
    done = subprocess.run([sys.executable, "-m", "pytest", *_load_plugin(), "-p", "no:cacheprovider", "--help"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=_base_env(()), cwd=_KIT)
    return "--devsim-sanitize" in done.stdout


@functools.cache
def _load_plugin() -> tuple[str, ...]:
    """`-p devsim_subject_kit.pytest_plugin` unless the kit is installed (its pytest11 entry point loads it)."""
    installed = any(e.name == "devsim" for e in entry_points(group="pytest11"))
    return () if installed else ("-p", "devsim_subject_kit.pytest_plugin")


def _base_env(paths: tuple[Path, ...], extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    before = [str(p) for p in paths] + [str(_KIT)]
    env["PYTHONPATH"] = os.pathsep.join(before + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the cached trees
    return env


def run_trigger(case: Case, trigger: Trigger, installed: Installed, work: Path, devsim: str, hosts_dir: Path | None,
                timeout: float) -> Session:
    """Run `trigger` on every one of its hosts in one `--devsim-host` session under `work` (made afresh)."""
    if work.exists():
        shutil.rmtree(work)
    observations = work / "observations"
    observations.mkdir(parents=True)
    report, junit = work / "report.json", work / "junit.xml"
    args = [*_load_plugin(), "-p", "no:cacheprovider", f"--devsim={devsim}", "--devsim-host", ",".join(trigger.hosts),
            f"--devsim-report={report}", f"--junitxml={junit}", f"--devsim-timeout={timeout:g}", "-q", "-rfE"]
    if hosts_dir is not None and hosts_dir.is_dir():
        args += ["-o", f"devsim_hosts={hosts_dir.resolve()}"]
    if case.install.stubs:
        args += ["-p", STUBS_PLUGIN]
    if sanitizer_available():
        args.append("--devsim-sanitize=report")  # with "=": the option takes an optional value
    if trigger.kind == "suite":
        where = installed.rootdir
        args += ["-o", f"cache_dir={work / 'pytest-cache'}", *trigger.args, *trigger.tests]
    else:
        where = work
        (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # no ini of an enclosing folder applies
        if trigger.kind == "repro":
            script = (case.bugs_dir / str(trigger.script)).resolve()
            source = _REPRO_TEST.format(script=str(script), env=OBSERVATION_ENV)
        else:
            source = _IMPORT_TEST.format(modules=list(trigger.modules))
        (work / f"test_devsim_{trigger.kind}.py").write_text(source, encoding="utf-8")
        args.append(f"test_devsim_{trigger.kind}.py")
    env = _base_env(installed.pythonpath, {**case.install.env, OBSERVATION_ENV: str(observations)})
    started = time.monotonic()
    code, tail, timed_out = _run([sys.executable, "-m", "pytest", *args], where, env, timeout, work / "output.txt")
    session = Session(code=code, seconds=round(time.monotonic() - started, 3), report=None, junit=junit, tail=tail,
                      timed_out=timed_out)
    if report.is_file():
        try:
            session.report = json.loads(report.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            session.report = None
    for path in sorted(observations.glob("*.json")):
        try:
            session.observations[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            continue
    return session


def _run(command: list[str], where: Path, env: dict[str, str], timeout: float,
         output: Path) -> tuple[int | None, list[str], bool]:
    """Run `command` in a process group of its own, its output to `output`; past `timeout` the group is killed."""
    with output.open("wb") as sink:
        process = subprocess.Popen(command, cwd=where, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process.pid)
            process.wait()
            code = None
        except BaseException:
            _kill_group(process.pid)
            process.wait()
            raise
    tail = output.read_text(encoding="utf-8", errors="replace").splitlines()[-_TAIL:]
    return code, tail, timed_out


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
