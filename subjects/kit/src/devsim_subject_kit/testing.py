"""A fake devsim for a subject's own tests: it speaks the protocol to the subject running as a subprocess and
checks every line it reads against the committed schema (`FromSubject`), plus the hosts devsim's profiles
resolve to and the selector forms devsim sends."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from .protocol import violation


class ProtocolViolation(AssertionError):
    """The subject wrote something devsim would refuse."""


class Driver:
    """Runs `python -m MODULE` (or `command`) as a subject and drives it like devsim does."""

    def __init__(self, module: str, env: dict[str, str], timeout: float = 120.0,
                 command: list[str] | None = None) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the driver
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
        )
        self.timeout = timeout
        self.lines: list[bytes] = []  # every stdout line, for the purity check
        self.handshake: dict[str, Any] | None = None
        self.started = time.monotonic()
        self.handshake_s: float | None = None
        self._seq = 0

    # -- raw I/O

    def send(self, msg: dict[str, Any]) -> None:
        """One message as a JSON line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def send_raw(self, data: bytes) -> None:
        """Bytes as they are (for malformed input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        """The next answer, schema-checked."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise ProtocolViolation(f"subject closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr_text()[-4000:]}")
        self.lines.append(line)
        try:
            msg = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProtocolViolation(f"not a JSON line on stdout: {line[:300]!r}") from exc
        problem = violation(msg, "FromSubject")
        if problem is not None:
            raise ProtocolViolation(f"{problem}: {line[:300]!r}")
        answer: dict[str, Any] = msg
        return answer

    def stderr_text(self) -> str:
        """Everything the subject wrote on stderr so far."""
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    # -- exchanges

    def hello(self, protocol: int = 1, live: bool = False) -> dict[str, Any]:
        """Send hello, read the handshake."""
        hello: dict[str, Any] = {"type": "hello", "protocol": protocol, "devsim": "0.2.0"}
        if live:
            hello["live"] = True
        self.send(hello)
        self.handshake = self.read()
        self.handshake_s = time.monotonic() - self.started
        if self.handshake["type"] != "handshake":
            raise ProtocolViolation(f"expected handshake, got {self.handshake}")
        return self.handshake

    def scenario(
        self, host: dict[str, Any], steps: list[dict[str, Any]], name: str | None = None, end: bool = True
    ) -> dict[str, Any]:
        """Runs one scenario; returns {"start": ready|unsupported, "answers": [...], "done": done|None}."""
        self._seq += 1
        name = name or f"test/scenario_{self._seq}.toml"
        self.send({"type": "scenario", "name": name, "host": host})
        start = self.read()
        if start.get("scenario") != name:
            raise ProtocolViolation(f"answer for the wrong scenario: {start}")
        result: dict[str, Any] = {"start": start, "answers": [], "done": None}
        if start["type"] != "ready":
            return result
        for number, step in enumerate(steps, 1):
            self.send({"type": "step", "scenario": name, "number": number, **step})
            answer = self.read()
            if answer.get("scenario") != name or answer.get("number") != number:
                raise ProtocolViolation(f"answer out of order: {answer}")
            result["answers"].append(answer)
        if end:
            self.send({"type": "end", "scenario": name})
            result["done"] = self.read()
            if result["done"] != {"type": "done", "scenario": name}:
                raise ProtocolViolation(f"expected done, got {result['done']}")
        return result

    def step(self, host: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        """One step in a scenario of its own."""
        answer: dict[str, Any] = self.scenario(host, [step])["answers"][0]
        return answer

    def close(self) -> int:
        """Close stdin, wait for the exit status; stdout after the last answer is a violation."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        assert self.proc.stdout is not None
        rest = self.proc.stdout.read()
        if rest:
            self.lines.extend(rest.splitlines(keepends=True))
            raise ProtocolViolation(f"stdout after the last answer: {rest[:300]!r}")
        return code


# -- selectors as devsim sends them


def s(written: str) -> dict[str, Any]:
    """A string selector."""
    return {"written": written, "form": "string"}


def o(ordinal: int) -> dict[str, Any]:
    """An integer selector."""
    return {"written": ordinal, "form": "ordinal"}


def fam(family: str) -> dict[str, Any]:
    """A family-enum selector."""
    return {"family": family, "form": "family_enum"}


def tdev(device_type: str, index: int | None = None) -> dict[str, Any]:
    """A torch.device selector."""
    return {"device_type": device_type, "index": index, "form": "torch_device"}


# -- hosts (devsim's shipped profiles, scenarios/hosts/*.toml, resolved as devsim sends them)


def gpu(arch: str, name: str, smem: int = 65536) -> dict[str, Any]:
    """A GPU as devsim sends it."""
    return {"arch": arch, "name": name, "smem_optin": smem, "uuid": f"GPU-{arch}-{name}"}


R9700 = gpu("gfx1201", "AMD Radeon AI PRO R9700")
MI300X = gpu("gfx942:sramecc+:xnack-", "AMD Instinct MI300X")
H200 = gpu("sm_90", "NVIDIA H200", 232448)


def host(torch: str, gpus: list[dict[str, Any]], current: int = 0, env: dict[str, Any] | None = None,
         visible: list[int] | None = None, foreign: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A resolved host as devsim sends it."""
    return {
        "torch": torch,
        "gpus": gpus,
        "foreign_gpus": foreign or [],
        "env": env or {},
        "visible": list(range(len(gpus))) if visible is None else visible,
        "current": current,
    }


R9700X2 = host("hip", [R9700, R9700])
AMD_MIXED = host("hip", [MI300X, R9700])
H200X2 = host("cuda", [H200, H200])
CPU = host("cpu", [])
