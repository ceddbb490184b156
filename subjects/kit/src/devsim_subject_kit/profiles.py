"""devsim's host profiles, resolved by devsim itself (`devsim hosts --format json`): one visible-device model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .host import Host


class ProfileError(Exception):
    """devsim could not be found or could not list its profiles."""


def find_devsim(configured: str | None = None) -> str:
    """The devsim binary: `configured`, else $DEVSIM, else `devsim` on PATH, else the one beside this Python
    (a venv's `bin/`, where `pip install devsim-harness` puts it, also when the venv is not activated)."""
    candidate = configured or os.environ.get("DEVSIM") or "devsim"
    found = shutil.which(candidate)
    if found is None and candidate == "devsim":
        found = shutil.which("devsim", path=sysconfig.get_path("scripts"))
    if found is None:
        raise ProfileError(
            f"devsim not found ({candidate!r}): pip install devsim-harness, put it on PATH (cargo install --path .), "
            "set DEVSIM, or give --devsim / the devsim_binary ini option"
        )
    return found


def load_profiles(devsim: str, folders: Sequence[Path] = ()) -> dict[str, dict[str, Any]]:
    """Every profile devsim knows (its shipped ones, then `folders`), by name, as protocol host messages."""
    command = [devsim, "hosts", "--format", "json"]
    for folder in folders:
        command += ["--hosts", str(folder)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProfileError(f"failed to run {' '.join(command)}: {exc}") from exc
    if done.returncode != 0:
        raise ProfileError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{' '.join(command)} printed something that is not JSON: {exc}") from exc
    if document.get("load_errors"):
        first = document["load_errors"][0]
        raise ProfileError(f"a host profile failed to load: {first}")
    profiles: dict[str, dict[str, Any]] = {}
    for entry in document.get("hosts", []):
        profiles[entry["name"]] = {
            "torch": entry["torch"],
            "gpus": entry["gpus"],
            "foreign_gpus": entry["foreign_gpus"],
            "env": entry["env"],
            "visible": entry.get("visible"),
            "current": entry["current"],
        }
        for optional in ("runtime_version", "arch_list"):
            if entry.get(optional) is not None:
                profiles[entry["name"]][optional] = entry[optional]
    return profiles


def host_of(name: str, message: dict[str, Any]) -> Host:
    """A profile as the kit's Host; a profile torch would refuse (no visible resolution) raises ProfileError."""
    if message.get("visible") is None:
        raise ProfileError(f"profile {name}: torch refuses its visible-device variables {message['env']}")
    return Host.from_message(message)
