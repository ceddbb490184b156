"""`pytest --devsim-host PROFILE[,PROFILE...]`: a whole pytest session, collection included, on a simulated host.

The run pytest was started as (the *parent*) runs no test. Before any conftest is imported it resolves the
profiles with devsim, then runs pytest again once per profile, one after the other (its own arguments without
`--devsim-host`, in the same folder, output streamed), and exits with the worst of their exit codes (see
`worst`). Each of those runs (a *session child*) has `DEVSIM_SESSION` in its environment: the profile, its
host as devsim resolved it, the per-test timeout and where to leave its part of the report. The plugin reads
it when it is imported, before conftests and test modules, installs the kit's SimulatedTorch for that host and
answers NVML and amdsmi from it (`boot`, `mgmtlibs`), so the project's import-time constants (`IS_ROCM =
torch.version.hip is not None`), its platform detection, capability caches and threads it starts at import all
come up on the simulated host. Nothing is forked from a process
that had already imported the project.

A process started by a test inherits `DEVSIM_SESSION`, the visible-device variables and PATH, on which the
session child's first folder holds `rocminfo`, `nvidia-smi`, `amd-smi` and `rocm-smi` answering from the
host (`shims`). So a device tool run in a subprocess answers from the simulated host, and a Python subprocess
that loads the plugin (pytest-xdist's workers, a nested pytest run) is on the simulated host too. A Python
subprocess that does not load the plugin (`python -c "import torch"`) imports the real torch: it is not on the
simulated host.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from .host import Host, HostError
from .profiles import ProfileError, find_devsim, host_of, load_profiles

#: The environment variable that makes a pytest run a session child (JSON, `SessionSpec`).
SESSION_ENV = "DEVSIM_SESSION"
#: The environment variable naming the profiles when neither `--devsim-host` nor the ini option does.
HOST_ENV = "DEVSIM_HOST"
#: The per-test timeout when none is given (seconds).
DEFAULT_TIMEOUT = 300.0
#: The report document's format version.
REPORT_FORMAT = 1

# exit codes from best to worst: every test passed, none collected, a test failed, interrupted, usage error,
# internal error (anything else, a child killed by a signal included, counts as an internal error)
_RANK = [pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.TESTS_FAILED,
         pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR]


@dataclass(frozen=True)
class SessionSpec:
    """What a session child is told: its profile, the host devsim resolved for it, the timeout, its report."""

    profile: str
    host: dict[str, Any]
    timeout: float = DEFAULT_TIMEOUT
    #: where the child streams its results (`stream`)
    report: str | None = None
    #: a file of the node ids earlier children of this session ran (one a line): not run again
    skip: str | None = None
    #: the sanitizer's mode (`report` or `error`), None when it is off
    sanitize: str | None = None
    #: the sanitizer's suppressions file (absolute), if any
    suppressions: str | None = None

    def to_env(self) -> str:
        """The value of `DEVSIM_SESSION`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str) -> SessionSpec:
        """Read `DEVSIM_SESSION`; a malformed value raises ValueError naming it."""
        try:
            data = json.loads(text)
            return cls(profile=str(data["profile"]), host=dict(data["host"]), timeout=float(data["timeout"]),
                       report=data.get("report"), skip=data.get("skip"), sanitize=data.get("sanitize"),
                       suppressions=data.get("suppressions"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{SESSION_ENV} is not a devsim session: {exc!r}") from exc


@dataclass
class SessionHost:
    """The session child's simulated host: its spec, the kit's Host and the installed SimulatedTorch."""

    spec: SessionSpec
    host: Host
    torch_host: Any
    #: what makes every thread's start enter the host (`threads`)
    threads: Any = None
    #: the dispatch sanitizer, when the session runs sanitized (`sanitize`)
    sanitizer: Any = None


def worst(codes: Sequence[int]) -> int:
    """The worst exit code of the children (`_RANK`); no children at all is a usage error."""
    if not codes:
        return int(pytest.ExitCode.USAGE_ERROR)

    order = [int(c) for c in _RANK]

    def rank(code: int) -> int:
        return order.index(code) if code in order else len(order) - 1

    chosen = max(codes, key=rank)
    return chosen if chosen in order else int(pytest.ExitCode.INTERNAL_ERROR)


# -- the session child


def boot(environ: dict[str, str] | None = None) -> SessionHost | str | None:
    """In a session child, install the simulated host before anything imports torch.

    Returns None outside a session child, the SessionHost once installed, or why this process must not run
    (a usage error for the plugin to raise): torch was imported before the plugin could patch it, torch does
    not import, or the kit cannot drive this torch."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    text = env.get(SESSION_ENV)
    if not text:
        return None
    try:
        spec = SessionSpec.from_env(text)
        message = spec.host
        devsim = env.get("DEVSIM")
        if devsim:
            # a process started with its own visible-device variables sees what they leave (`childmasks`)
            from .childmasks import stacked_host

            message = stacked_host(message, env, devsim)
        host = Host.from_message(message)
    except (ValueError, HostError) as exc:
        return str(exc)
    if "torch" in sys.modules:
        from .patches import TorchOwner

        if TorchOwner.installed is None:
            return (
                f"devsim session on host {spec.profile}: the module 'torch' "
                f"({getattr(sys.modules['torch'], '__file__', None)}) was imported before the devsim plugin could "
                "patch it (another plugin or sitecustomize imported it first), so the project would see this "
                "machine's torch: load the plugin first (-p devsim_subject_kit.pytest_plugin) or drop the plugin "
                "that imports torch"
            )
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        return f"devsim session on host {spec.profile}: the simulated host patches torch, which does not import: {exc}"
    try:
        from .simtorch import SimulatedTorch

        torch_host = SimulatedTorch().install(host)
    except Exception as exc:  # noqa: BLE001 - any failure to patch means the kit cannot drive this torch
        return f"devsim session on host {spec.profile}: the kit cannot drive this torch: {exc!r}"
    from .mgmtlibs import ManagementLibraries

    # NVML and amdsmi, which some projects ask instead of torch (vLLM's platform detection), answer from the host
    ManagementLibraries(lambda: torch_host.host, torch_host.recorder).install()
    threads = _all_threads(torch_host)
    try:
        sanitizer = _sanitizer(spec, torch_host, os.environ if environ is None else environ)
    except ValueError as exc:
        return f"devsim session on host {spec.profile}: {exc}"
    return SessionHost(spec=spec, host=host, torch_host=torch_host, threads=threads, sanitizer=sanitizer)


def _sanitizer(spec: SessionSpec, torch_host: Any, environ: Any) -> Any:
    """The dispatch sanitizer installed over `torch_host` when the spec (`--devsim-sanitize`) or
    $DEVSIM_SANITIZE asks for it, else None. A bad mode or suppressions file raises ValueError."""
    from .sanitize import SANITIZE_ENV

    mode = spec.sanitize or environ.get(SANITIZE_ENV) or None
    if mode is None:
        return None
    from .sanitize import Sanitizer, load

    suppressions = load(spec.suppressions) if spec.suppressions else None
    return Sanitizer(torch_host, mode=mode, suppressions=suppressions, profile=spec.profile).install()


def _all_threads(torch_host: Any) -> Any:
    """Every thread started from now on enters the host's CPU-backed GPUs (`threads`), as the main thread's test
    phases do, while the host has GPUs."""
    from contextlib import nullcontext

    from .threads import AllThreads

    def mode() -> Any:
        if not torch_host.host.has_gpu_runtime:
            return nullcontext()
        # imported once a thread needs it, never on a host without GPUs
        from .cpubacked import CpuBackedGpus

        return CpuBackedGpus()  # type: ignore[no-untyped-call]  # torch's mode is untyped

    return AllThreads(mode, lambda exc: None).install()


# -- the parent


def requested(config: pytest.Config, given: str | None) -> list[str]:
    """The profiles asked for: `given` (`--devsim-host`), else the ini option `devsim_host`, else $DEVSIM_HOST."""
    value = given if given is not None else (config.getini("devsim_host") or os.environ.get(HOST_ENV) or "")
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    if given is not None and not names:
        raise pytest.UsageError(f"--devsim-host {given!r} names no profile (devsim hosts lists them)")
    return names


def resolve(early_config: pytest.Config, names: list[str]) -> dict[str, tuple[dict[str, Any], Host]]:
    """The named profiles, in order: each as devsim's host message and as the kit's Host; an unknown or
    undrivable one is a usage error listing them."""
    ns = early_config.known_args_namespace
    binary = ns.devsim_binary or early_config.getini("devsim_binary") or None
    try:
        devsim = find_devsim(binary)
        profiles = load_profiles(devsim, [Path(p) for p in early_config.getini("devsim_hosts")])
    except ProfileError as exc:
        raise pytest.UsageError(f"--devsim-host: {exc}") from exc
    unknown = [n for n in names if n not in profiles]
    if unknown:
        raise pytest.UsageError(
            f"--devsim-host: unknown devsim host profile {', '.join(unknown)}; the profiles are: "
            + ", ".join(sorted(profiles))
        )
    hosts = {}
    for name in names:
        try:
            host = host_of(name, profiles[name])
        except (ProfileError, HostError) as exc:
            raise pytest.UsageError(f"--devsim-host: {exc}") from exc
        reason = host.unsupported()
        if reason:
            raise pytest.UsageError(f"--devsim-host: profile {name}: {reason}")
        hosts[name] = (profiles[name], host)
    # the session's processes (and the device tools they run) ask this devsim how their own masks stack
    os.environ["DEVSIM"] = devsim
    return hosts


def child_args(args: Sequence[str]) -> list[str]:
    """The invocation's arguments without `--devsim-host` (both `--devsim-host X` and `--devsim-host=X`)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--devsim-host":
            skip = True
        elif not arg.startswith("--devsim-host="):
            kept.append(arg)
    return kept


def dispatch(early_config: pytest.Config, names: list[str]) -> int:
    """Run the session once per profile (`sessionrun`: a child process each, a fresh one after one dies);
    returns the worst exit code."""
    from .sessionrun import DEFAULT_MAX_RESTARTS, RunOptions, run_profile

    hosts = resolve(early_config, names)
    ns = early_config.known_args_namespace
    where = early_config.invocation_params.dir
    junit_path: str | None = getattr(ns, "xmlpath", None)  # absent under -p no:junitxml
    restarts = getattr(ns, "devsim_max_restarts", None)
    sanitize, suppressions = sanitize_options(ns, Path(where))
    options = RunOptions(
        sanitize=sanitize, suppressions=suppressions,
        args=child_args(early_config.invocation_params.args), where=Path(where),
        timeout=float(ns.devsim_timeout if ns.devsim_timeout is not None else DEFAULT_TIMEOUT),
        junit=bool(junit_path), max_restarts=DEFAULT_MAX_RESTARTS if restarts is None else max(int(restarts), 0),
        stop_on_failure=bool(getattr(ns, "maxfail", 0)),
    )
    codes: dict[str, int] = {}
    restarted: dict[str, int] = {}
    unrun: dict[str, list[str]] = {}
    tests: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    suites: list[ElementTree.Element] = []
    for number, (name, (message, host)) in enumerate(hosts.items(), 1):
        say(f"devsim: session {number} of {len(hosts)} on simulated host {name} ({describe(host)})")
        run = run_profile(name, message, host, options)
        for suite in run.suites:  # the JUnit file says how many times the profile's session was restarted
            properties = suite.find("properties")
            if properties is None:
                properties = ElementTree.Element("properties")
                suite.insert(0, properties)
            ElementTree.SubElement(properties, "property", name="devsim_restarts", value=str(run.restarts))
        codes[name], restarted[name], tests, suites = run.code, run.restarts, tests + run.tests, suites + run.suites
        flags += run.sanitizer
        if run.unrun:
            unrun[name] = run.unrun
        if codes[name] == pytest.ExitCode.INTERRUPTED or (options.stop_on_failure and codes[name] != 0):
            break
    left = [n for n in hosts if n not in codes]
    summary = ", ".join(f"{n}: exit {c}" + (f" after {restarted[n]} restart(s)" if restarted[n] else "")
                        for n, c in codes.items())
    say(f"devsim: sessions done ({summary})" + (f"; not run after that: {', '.join(left)}" if left else ""))
    flagged: list[dict[str, Any]] = []
    if sanitize is not None:
        from .sanitize import merge
        from .sanitize.report import section

        flagged = merge(flags)
        for line in section(flagged, sanitize):
            say(line)
    if ns.devsim_report:
        # format 1 still: `restarts` and `unrun`, the `crashed` outcome and an entry's `output` came later
        document = {"format": REPORT_FORMAT, "profiles": list(hosts), "exit_codes": codes, "not_run": left,
                    "restarts": restarted, "unrun": unrun, "tests": tests}
        if sanitize is not None:  # an added key (issue 54): absent when the sanitizer is off
            document["sanitizer"] = flagged
        Path(where, ns.devsim_report).write_text(json.dumps(document, indent=2) + "\n")
    if junit_path:
        merged = ElementTree.Element("testsuites", name="pytest tests")
        merged.extend(suites)
        ElementTree.ElementTree(merged).write(Path(where, junit_path), encoding="utf-8", xml_declaration=True)
    return worst(list(codes.values()))


def sanitize_options(ns: Any, where: Path) -> tuple[str | None, str | None]:
    """The sanitizer's mode (`--devsim-sanitize`, else $DEVSIM_SANITIZE; None: off) and its suppressions file
    (absolute, read once here so that a bad file is a usage error naming its line before any session runs)."""
    from .sanitize import MODES, SANITIZE_ENV

    mode: str | None = getattr(ns, "devsim_sanitize", None) or os.environ.get(SANITIZE_ENV) or None
    if mode is not None and mode not in MODES:
        raise pytest.UsageError(f"${SANITIZE_ENV}={mode!r}: the sanitizer's mode is one of {', '.join(MODES)}")
    path: str | None = getattr(ns, "devsim_sanitize_suppressions", None)
    if path is not None and mode is None:
        raise pytest.UsageError("--devsim-sanitize-suppressions needs --devsim-sanitize")
    if path is None:
        return mode, None
    from .sanitize import SuppressionError, load

    absolute = str(Path(where, path).resolve())
    try:
        load(absolute)
    except SuppressionError as exc:
        raise pytest.UsageError(f"--devsim-sanitize-suppressions: failed to {exc}") from exc
    return mode, absolute


def junit_suites(path: Path, profile: str) -> list[ElementTree.Element]:
    """The test suites of one session's JUnit file, each named with the profile (none if it wrote no file)."""
    if not path.is_file():
        return []
    suites = list(ElementTree.parse(path).getroot().iter("testsuite"))
    for suite in suites:
        suite.set("name", f"{suite.get('name', 'pytest')}[devsim:{profile}]")
    return suites


def describe(host: Host) -> str:
    """`torch=hip, gfx1201, gfx1201`: the build and the visible GPUs' archs, for the sessions' output."""
    gpus = ", ".join(g.arch for g in host.visible_gpus()) or "no GPU"
    return f"torch={host.torch}, {gpus}"


def say(line: str) -> None:
    """Print one line of the parent's own to stdout at once (between the children's streamed output)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
