"""pytest plugin (entry point `pytest11`: devsim): run a project's own tests on devsim's host profiles.

    @pytest.mark.devsim_host("r9700x2", "h200x2")
    def test_rocm_is_detected(devsim_host):
        from gptqmodel.utils.rocm import IS_ROCM          # imported on the simulated host
        assert IS_ROCM == devsim_host.host.is_rocm
        assert not devsim_host.events("nvidia_capability")

A marked test runs once per named profile, each time in a forked child. The child patches torch to the profile's
host (the kit's SimulatedTorch), then drops the project's modules from `sys.modules` (ini `devsim_reimport`, or
the marker's `reimport=[...]`), so the test's own imports run the project's import-time code (`IS_ROCM`,
`HAS_CUDA` ...) on that host: monkeypatching `torch.version.hip` after the import would not. A forked child has
only the forking thread: a library that started a thread in this process (a logger's flush thread) is listed in
`devsim_reimport` too, so the child imports it afresh. The device queries
the test makes are recorded (`devsim_host.trace`). Profiles are resolved by devsim (`devsim hosts --format json`):
its shipped ones plus the folders of the ini option `devsim_hosts`. An unknown profile is a usage error listing
them; devsim or torch missing, or a host the simulated torch cannot drive, skips with the reason.

The whole session on a simulated host (`session`, `sessionchild`): an unmodified suite, conftests and
collection included, runs on each named profile in a fresh pytest process of its own:

    pytest --devsim-host r9700x2,h200 [--devsim-timeout 300] [--devsim-report devsim-report.json]
           [--devsim-max-restarts 10]

The profiles come from `--devsim-host`, else the ini option `devsim_host`, else $DEVSIM_HOST. Test ids get the
profile (`test_x[devsim:r9700x2]`), a session child that dies mid-test is replaced by a fresh one that resumes
after that test (`sessionrun`), every thread the project starts is on the host (`threads`), the exit code is
the worst of the sessions', `devsim_host` (unmarked tests)
and `devsim_trace` give the session's host and the test's device queries, and `rocminfo`, `nvidia-smi`,
`amd-smi` and `rocm-smi` answer from the host (`shims`). A marked test in such a session runs on its marker's
profiles, forked from the session child.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import session as _session
from .host import Host
from .profiles import ProfileError, find_devsim, host_of, load_profiles
from .sessionchild import SessionChild, dup_stderr

MARKER = "devsim_host"
_PROFILES = pytest.StashKey[dict[str, dict[str, Any]]]()
_PROBLEM = pytest.StashKey[str]()
_HANDLE = pytest.StashKey["DevsimHost"]()
_MISUSES = pytest.StashKey[list[str]]()

# In a session child (DEVSIM_SESSION set) the simulated host is installed when the plugin is imported, before any
# conftest or test module can import torch; outside one this is None. A string is why the child must not run.
_BOOTED = _session.boot()
_REAL_STDERR = dup_stderr() if isinstance(_BOOTED, _session.SessionHost) else None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("devsim", "devsim host profiles")
    group.addoption("--devsim", dest="devsim_binary", default=None, help="the devsim binary (default: $DEVSIM, PATH)")
    parser.addini("devsim_binary", "the devsim binary (default: $DEVSIM, then devsim on PATH)", default=None)
    parser.addini("devsim_hosts", "folders of project host profiles, relative to the rootdir", type="paths")
    parser.addini("devsim_reimport", "module prefixes re-imported on the simulated host", type="linelist")
    group.addoption(
        "--devsim-host", dest="devsim_session_hosts", default=None, metavar="PROFILE[,PROFILE...]",
        help="run the whole session once per devsim host profile, each in a fresh pytest process on that simulated "
        f"host (default: the ini option devsim_host, then ${_session.HOST_ENV})",
    )
    group.addoption("--devsim-timeout", dest="devsim_timeout", type=float, default=None, metavar="SECONDS",
                    help=f"with --devsim-host: fail a test phase that runs longer (default {_session.DEFAULT_TIMEOUT:g}; "
                    "0: none)")
    group.addoption("--devsim-max-restarts", dest="devsim_max_restarts", type=int, default=None, metavar="N",
                    help="with --devsim-host: after a session child dies, resume in a fresh one at most N times per "
                    "profile (default 10; 0: never), then leave the tests left unrun")
    group.addoption("--devsim-report", dest="devsim_report", default=None, metavar="FILE",
                    help="with --devsim-host: write each test's outcome on each profile to FILE (JSON)")
    parser.addini("devsim_host", "devsim host profiles the whole session runs on (as --devsim-host)", default=None)
    group.addoption("--devsim-sanitize", dest="devsim_sanitize", nargs="?", const="report", default=None,
                    choices=("report", "error"), metavar="MODE",
                    help="with --devsim-host: flag every dispatch rule the run breaks at the project's line "
                    "(docs/sanitizer.md); report (default) lists them after the sessions and in --devsim-report, "
                    "error also fails the test that raised one. Write the mode with '=' (--devsim-sanitize=error)")
    group.addoption("--devsim-sanitize-suppressions", dest="devsim_sanitize_suppressions", default=None,
                    metavar="FILE", help="with --devsim-sanitize: a TOML file of [[suppress]] entries (rule, file, "
                    "function, reason) whose flags are dropped")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before any conftest: a session child checks its host came up; `--devsim-host` runs the session children
    and ends this process with their worst exit code."""
    if isinstance(_BOOTED, str):
        raise pytest.UsageError(_BOOTED)
    if _BOOTED is not None:
        if not early_config.pluginmanager.has_plugin("devsim-session"):
            early_config.pluginmanager.register(SessionChild(_BOOTED, _REAL_STDERR), "devsim-session")
        _register_sanitizer(early_config)
        return
    ns = early_config.known_args_namespace
    if ns.help or ns.version:
        return
    names = _session.requested(early_config, ns.devsim_session_hosts)
    if not names:
        if getattr(ns, "devsim_sanitize", None) is not None:
            raise pytest.UsageError("--devsim-sanitize needs --devsim-host (or devsim_host, $DEVSIM_HOST): it "
                                    "checks a session on a simulated host")
        return
    capture = early_config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=True)  # the sessions' output goes straight to the terminal
    raise SystemExit(_session.dispatch(early_config, names))


def pytest_configure(config: pytest.Config) -> None:
    if isinstance(_BOOTED, str):
        raise pytest.UsageError(_BOOTED)
    if _BOOTED is None and not (config.option.help or config.option.version) and _session.requested(config, config.option.devsim_session_hosts):
        # pytest_load_initial_conftests never ran here: the plugin came from a conftest, after the conftests
        raise pytest.UsageError(
            "--devsim-host (or devsim_host, $DEVSIM_HOST) needs the devsim plugin loaded before the conftests, and "
            "it was loaded from a conftest: install the kit (its pytest11 entry point) or pass "
            "-p devsim_subject_kit.pytest_plugin, instead of pytest_plugins"
        )
    if _BOOTED is not None and not config.pluginmanager.has_plugin("devsim-session"):
        config.pluginmanager.register(SessionChild(_BOOTED, _REAL_STDERR), "devsim-session")
    if _BOOTED is not None:
        _register_sanitizer(config)
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*profiles, reimport=[...]): run the test once per devsim host profile, in a forked child on "
        "that simulated host (the devsim_host fixture is the handle)",
    )


def _register_sanitizer(config: pytest.Config) -> None:
    """In a sanitized session child (or its xdist worker): the sanitizer's hooks (`sanitize.plugin`)."""
    if not isinstance(_BOOTED, _session.SessionHost) or _BOOTED.sanitizer is None:
        return
    if not config.pluginmanager.has_plugin("devsim-sanitizer"):
        from .sanitize.plugin import SanitizerPlugin

        config.pluginmanager.register(SanitizerPlugin(_BOOTED.sanitizer, _BOOTED.spec.report), "devsim-sanitizer")


@dataclass
class DevsimHost:
    """The handle a marked test gets: the profile, the simulated host and the trace of its device queries."""

    profile: str
    host: Host
    torch_host: Any
    trace: list[dict[str, Any]] = field(default_factory=list)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The recorded events called `name`."""
        return [e for e in self.trace if e["event"] == name]


def _profiles(config: pytest.Config) -> dict[str, dict[str, Any]]:
    """devsim's profiles, loaded once per session; a failure is remembered as the skip reason."""
    if _PROFILES in config.stash:
        return config.stash[_PROFILES]
    profiles: dict[str, dict[str, Any]] = {}
    try:
        binary = config.getoption("devsim_binary") or config.getini("devsim_binary") or None
        folders = [Path(p) for p in config.getini("devsim_hosts")]
        profiles = load_profiles(find_devsim(binary), folders)
    except ProfileError as exc:
        config.stash[_PROBLEM] = str(exc)
    config.stash[_PROFILES] = profiles
    return profiles


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    names = [str(n) for n in marker.args]
    where = metafunc.definition.nodeid
    misuses = metafunc.config.stash.setdefault(_MISUSES, [])
    if not names:
        misuses.append(f"{where}: @pytest.mark.{MARKER}() names no profile")
        return
    if "devsim_host" not in metafunc.fixturenames:
        misuses.append(f"{where}: marked {MARKER} but does not take the devsim_host fixture")
        return
    profiles = _profiles(metafunc.config)
    unknown = [n for n in names if profiles and n not in profiles]
    if unknown:
        misuses.append(
            f"{where}: unknown devsim host profile {', '.join(unknown)}; the profiles are: " + ", ".join(sorted(profiles))
        )
        return
    metafunc.parametrize("devsim_host", names, indirect=True, ids=names)


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    """A misused marker is a usage error (exit 4), naming every test and what is wrong."""
    misuses = config.stash.get(_MISUSES, [])
    if misuses:
        raise pytest.UsageError("\n".join(misuses))


@pytest.fixture
def devsim_host(request: pytest.FixtureRequest) -> Any:
    """The simulated host of a `devsim_host`-marked test (set up in its forked child), or of the session
    (`--devsim-host`)."""
    handle = request.node.stash.get(_HANDLE, None)
    if handle is None and isinstance(_BOOTED, _session.SessionHost):
        handle = DevsimHost(profile=_BOOTED.spec.profile, host=_BOOTED.host, torch_host=_BOOTED.torch_host)
    if handle is None:
        pytest.fail(f"devsim_host is only available to tests marked @pytest.mark.{MARKER}(...) or run with "
                    "--devsim-host", pytrace=False)
    with handle.torch_host.recorder.capture() as trace:
        handle.trace = trace
        yield handle


@pytest.fixture
def devsim_trace(devsim_host: DevsimHost) -> list[dict[str, Any]]:
    """The device queries the test makes on its simulated host (`{"event", "device"?, "detail"?}`), as they come."""
    return devsim_host.trace


def _profile_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.get_closest_marker(MARKER) is None:
        return None
    name = callspec.params.get("devsim_host")
    return str(name) if name is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    profile = _profile_of(item)
    if profile is None:
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in _run_forked(item, profile):
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _skip_reason(item: pytest.Item, profile: str) -> tuple[Host | None, str | None]:
    problem = item.config.stash.get(_PROBLEM, None)
    if problem is not None:
        return None, problem
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        return None, f"the simulated host patches torch, which does not import here: {exc}"
    try:
        host = host_of(profile, _profiles(item.config)[profile])
    except ProfileError as exc:
        return None, str(exc)
    reason = host.unsupported()
    return (None, f"profile {profile}: {reason}") if reason else (host, None)


def _run_forked(item: pytest.Item, profile: str) -> list[pytest.TestReport]:
    host, reason = _skip_reason(item, profile)
    if host is None:
        return [_report(item, "skipped", (str(item.path), item.location[1] or 0, f"Skipped: {reason}"), "setup")]
    config = item.config
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: run the test's setup, call and teardown on the simulated host
        os.close(read_fd)
        code = 0
        try:
            from _pytest.runner import runtestprotocol

            _become(item, host, profile)
            reports = runtestprotocol(item, log=False)
            data = [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]
            with os.fdopen(write_fd, "w") as out:
                json.dump(data, out)
        except BaseException:  # noqa: BLE001 - the child must reach os._exit
            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        cause = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        return [_report(item, "failed", f"the forked child on devsim host {profile} died ({cause}) before reporting",
                        "call")]
    return [config.hook.pytest_report_from_serializable(config=config, data=d) for d in data]


def _become(item: pytest.Item, host: Host, profile: str) -> None:
    """In the child: patch torch to `host`, drop the project's modules so its imports run on that host."""
    from .simtorch import SimulatedTorch

    marker = item.get_closest_marker(MARKER)
    prefixes = tuple(item.config.getini("devsim_reimport")) + tuple(marker.kwargs.get("reimport", ()) if marker else ())
    if isinstance(_BOOTED, _session.SessionHost):  # a session child: its torch is patched already
        torch_host = _BOOTED.torch_host
        torch_host.configure(host)
    else:
        torch_host = SimulatedTorch().install(host)
    for name in [n for n in sys.modules if prefixes and n.startswith(prefixes)]:
        del sys.modules[name]
    item.stash[_HANDLE] = DevsimHost(profile=profile, host=host, torch_host=torch_host)


def _report(item: pytest.Item, outcome: str, longrepr: Any, when: str) -> pytest.TestReport:
    return pytest.TestReport(
        item.nodeid, item.location, {k: 1 for k in item.keywords}, outcome, longrepr, when  # type: ignore[arg-type]
    )
