"""A tiny fake project with a real-bug shape, for the real-bug runner's tests: `pick_dtype(d)` picks bf16 by
`get_device_capability(d)[0] >= 8` (buggy) or by the AMD arch on a HIP build (fixed); two commits in a git
repository laid out as a `--mirrors` folder, and a `bugs/` folder with a case-local host and a repro."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = "acme/fastdtype"

BUGGY = '''import torch


def pick_dtype(d):
    if torch.cuda.get_device_capability(d)[0] >= 8:
        return "bfloat16"
    return "float16"
'''

FIXED = '''import torch

_BF16_ARCHS = ("gfx90a", "gfx94", "gfx95", "gfx11", "gfx12")


def pick_dtype(d):
    if torch.version.hip is not None:
        arch = torch.cuda.get_device_properties(d).gcnArchName
        return "bfloat16" if arch.startswith(_BF16_ARCHS) else "float16"
    if torch.cuda.get_device_capability(d)[0] >= 8:
        return "bfloat16"
    return "float16"
'''

SUITE = '''import torch

from fastdtype import pick_dtype


def test_pick_dtype_matches_the_gpu():
    if torch.version.hip is not None:
        arch = torch.cuda.get_device_properties(0).gcnArchName
        assert pick_dtype(0) == ("float16" if arch.startswith("gfx10") else "bfloat16")
    else:
        assert pick_dtype(0) == "bfloat16"


def test_always_passes():
    assert pick_dtype is not None
'''

RDNA2 = '''description = "One Radeon RX 6800 XT (RDNA2, gfx1030) on a HIP build"
torch = "hip"

[[gpu]]
arch = "gfx1030"
name = "AMD Radeon RX 6800 XT"
'''

REPRO = '''def observe():
    from fastdtype import pick_dtype

    return pick_dtype(0)
'''

HANG = '''import time


def observe():
    time.sleep(600)
'''


@dataclass(frozen=True)
class Fake:
    """The fake project's mirror folder, its two commits and a bugs folder to write cases into."""

    mirrors: Path
    buggy: str
    fixed: str
    bugs: Path


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_fake(root: Path) -> Fake:
    """The fake project under `root`: a work repository, its bare mirror and a bugs folder."""
    work = root / "work"
    (work / "fastdtype").mkdir(parents=True)
    (work / "tests").mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "fastdtype" / "__init__.py").write_text(BUGGY)
    (work / "tests" / "test_dtype.py").write_text(SUITE)
    (work / "README.md").write_text("fastdtype\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "pick bf16 by capability")
    buggy = _git(work, "rev-parse", "HEAD")
    (work / "fastdtype" / "__init__.py").write_text(FIXED)
    _git(work, "commit", "-q", "-am", "read the AMD arch on a HIP build")
    fixed = _git(work, "rev-parse", "HEAD")
    mirrors = root / "mirrors"
    mirror = mirrors / REPOSITORY.replace("/", "+") / "repo"
    mirror.parent.mkdir(parents=True)
    _git(root, "clone", "-q", "--bare", str(work), str(mirror))
    bugs = root / "bugs"
    (bugs / "hosts").mkdir(parents=True)
    (bugs / "repro").mkdir()
    (bugs / "hosts" / "rdna2.toml").write_text(RDNA2)
    (bugs / "repro" / "fastdtype-bf16.py").write_text(REPRO)
    (bugs / "repro" / "hang.py").write_text(HANG)
    return Fake(mirrors=mirrors, buggy=buggy, fixed=fixed, bugs=bugs)


def case_text(fake: Fake, case_id: str = "fastdtype-bf16") -> str:
    """A good case file for the fake bug: a repro, a suite and an import trigger on the case-local rdna2 host."""
    return f'''format = 1
id = "{case_id}"
title = "bf16 chosen on RDNA2 by capability major >= 8 in pick_dtype"
repository = "{REPOSITORY}"
report = "https://example.invalid/acme/fastdtype/pull/1"
rule = "no-cross-vendor-probe"
hosts = ["rdna2"]

[buggy]
commit = "{fake.buggy}"

[fixed]
commit = "{fake.fixed}"

[install]
from = "git"
paths = ["fastdtype", "tests"]
stubs = ["aiohttp"]
env = {{ FASTDTYPE_FLAG = "1" }}

[[trigger]]
kind = "repro"
script = "repro/fastdtype-bf16.py"
misbehaves = {{ returns = "bfloat16" }}
behaves = {{ returns = "float16" }}
why = "bf16 on a gfx1030 that lacks it"

[[trigger]]
kind = "suite"
tests = ["tests/test_dtype.py"]

[[trigger]]
kind = "import"
modules = ["fastdtype", "aiohttp.web"]
'''


def make_wheels(folder: Path) -> None:
    """Wheels of the fake project on a local "index" folder (pip's `--find-links`): 1.0 buggy, 1.1 fixed."""
    import base64
    import hashlib
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    for version, source in (("1.0", BUGGY), ("1.1", FIXED)):
        info = f"fastdtype-{version}.dist-info"
        files = {
            "fastdtype/__init__.py": source,
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: fastdtype\nVersion: {version}\n",
            f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: devsim-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        record = []
        for name, text in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(text.encode())}")
        files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
        with zipfile.ZipFile(folder / f"fastdtype-{version}-py3-none-any.whl", "w") as wheel:
            for name, text in files.items():
                wheel.writestr(name, text)
