"""A side's tree in the cache: the index release (`pip install --no-deps --target`) or the commit's listed paths
(`git archive` from the local mirror), plus pinned extras and stubs. A `.done` stamp: nothing is downloaded or
exported again; a changed install spec gets a folder of its own (its key is in the folder's name).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .case import Case, Side
from .stubs import write_stubs

STAMP = ".done"
_TAIL = 1500


class InstallError(Exception):
    """A side could not be installed: why (a pip or git failure's last output, a missing mirror)."""


@dataclass(frozen=True)
class Installed:
    """A side's installed tree: its folder, the folders put first on sys.path, and what is the project's own."""

    root: Path
    pythonpath: tuple[Path, ...]
    #: the folders whose files are the project's own code (its tree or site), for the sanitizer's flags
    own: tuple[Path, ...]
    #: the folder a suite trigger runs in (the tree's root for git; site for an index install)
    rootdir: Path


def mirror_of(case: Case, mirrors: Path | None) -> Path | None:
    """The case's repository under `mirrors` (`owner+name/repo`, a bare git dir), or None where there is none."""
    if mirrors is None:
        return None
    path = mirrors / case.mirror_name / "repo"
    return path if path.is_dir() else None


def install_side(case: Case, side: Side, cache: Path, mirrors: Path | None) -> Installed:
    """Install `side` of `case` under `cache` (reused when its `.done` stamp is there)."""
    spec = {"source": case.install.source, "package": case.install.package, "release": side.release,
            "commit": side.commit, "paths": case.install.paths, "pip": case.install.pip, "stubs": case.install.stubs}
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    root = cache / case.id / f"{side.name}-{key}"
    site, tree, stubs = root / "site", root / "tree", root / "stubs"
    if not (root / STAMP).is_file():
        if root.exists():
            shutil.rmtree(root)  # a half-made install of an earlier run
        root.mkdir(parents=True)
        if case.install.source == "index":
            _pip(site, [f"{case.install.package}=={side.release}", *case.install.pip])
        else:
            _pip(site, list(case.install.pip)) if case.install.pip else site.mkdir()
            _export(case, side, tree, mirrors)
        write_stubs(stubs, case.install.stubs)
        (root / STAMP).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    if case.install.source == "index":
        return Installed(root=root, pythonpath=(stubs, site), own=(site,), rootdir=site)
    folders = []
    for folder in case.install.pythonpath:
        path = (tree / folder).resolve()
        if not path.is_relative_to(tree.resolve()):
            raise InstallError(f"pythonpath {folder!r} resolves outside the tree ({path})")
        folders.append(path)
    return Installed(root=root, pythonpath=(stubs, site, *folders), own=(tree,), rootdir=tree)


def _pip(site: Path, requirements: list[str]) -> None:
    """`pip install --no-deps --target site` from the package index (no other source)."""
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
               "--quiet", "--target", str(site), *requirements]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"pip install {' '.join(requirements)} ran past 900 s") from exc
    if done.returncode != 0:
        raise InstallError(f"pip install --no-deps {' '.join(requirements)} exited {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-_TAIL:]}")


def _export(case: Case, side: Side, tree: Path, mirrors: Path | None) -> None:
    """`git archive COMMIT -- paths` from the mirror, unpacked with tarfile's `data` filter (nothing outside)."""
    mirror = mirror_of(case, mirrors)
    if mirror is None:
        where = mirrors / case.mirror_name / "repo" if mirrors else "(no --mirrors given)"
        raise InstallError(f"no mirror of {case.repository} at {where}: a git install needs one (fetch the "
                           "repository, then --mirrors)")
    tree.mkdir(parents=True)
    command = ["git", "--git-dir", str(mirror), "archive", "--format=tar", str(side.commit), "--",
               *case.install.paths]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    problem = None
    try:
        with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
            archive.extractall(tree, filter="data")
    except (tarfile.TarError, OSError) as exc:
        problem = str(exc)
    process.stdout.close()
    error = process.stderr.read().decode("utf-8", errors="replace").strip()
    code = process.wait()
    if code != 0 or problem:
        raise InstallError(f"git archive {side.commit} of {case.repository} failed (exit {code}): "
                           f"{(error or problem or '')[-_TAIL:]}")
