"""The device command-line tools a project shells out to, answered from a simulated host: `write_shims(folder)`.

A session on a simulated host (`pytest --devsim-host`, see `session`) puts `folder` first on PATH, so
`rocminfo`, `nvidia-smi`, `amd-smi` and `rocm-smi`, run by the code under test or by any process it starts,
answer from the host instead of this machine. Each is a small Python script (run isolated, `python -I`, with
the host's facts written into it) that answers the common queries:

- `rocminfo`: the HSA agent listing (`Name: gfx1201`, `Marketing Name: ...`, `Device Type: GPU`, the ISA's
  target id), as `lowlevel` answers it in-process, in physical order: the first `Name: gfx` line is device 0's.
  ROCR_VISIBLE_DEVICES narrows it, HIP_VISIBLE_DEVICES does not; the tool reads its own process's
  ROCR_VISIBLE_DEVICES (devsim, named by $DEVSIM at session start, applies ROCr's rules), so a mask a project
  sets for a child stacks as on the machine;
- `nvidia-smi`: `-L`, `--query-gpu=FIELDS --format=csv[,noheader][,nounits]` (fields `index`, `name`,
  `compute_cap`, `uuid`, `pci.bus_id`, `memory.total`, `driver_version`, `count`), with `-i N`, and a short table
  with no arguments;
- `amd-smi`: `list` (with `--json`) and `version`;
- `rocm-smi`: no arguments (a short table), `--showproductname`, `-i`/`--showid`.

Like the management libraries they sit on, the tools see every GPU of their vendor in the box, foreign ones
included, and ignore CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES. A box without that vendor's GPUs has no driver:
the tool fails as it does on such a machine. Any other query exits 2 with a message naming devsim's simulation,
never an answer made up.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .host import Gpu, Host
from .lowlevel import (
    amd_box_gpus,
    nvidia_box_gpus,
    rocminfo_agent,
    rocminfo_document,
    rocminfo_text,
)

#: The tools a session answers, by file name.
TOOLS = ("rocminfo", "nvidia-smi", "amd-smi", "rocm-smi")

#: What the simulated tools report as the driver version (a plausible value, not a measured one).
DRIVER_VERSION = {"nvidia": "580.95.05", "amd": "6.14.14"}


def host_facts(host: Host, profile: str) -> dict[str, object]:
    """What the tools answer from: the box's GPUs of each vendor, and rocminfo's listing."""
    amd = amd_box_gpus(host)
    listing = None
    if amd:
        listing = rocminfo_text(host if host.is_rocm else Host(torch="hip", gpus=tuple(amd)))
    return {
        # rocminfo's parts, for the tool to list what its own ROCR_VISIBLE_DEVICES leaves
        "rocminfo_agents": [rocminfo_agent(g) for g in amd],
        "rocminfo_empty": rocminfo_document([]) if amd else None,
        "amd_uuids": [g.uuid for g in amd],
        "devsim": os.environ.get("DEVSIM"),
        "profile": profile,
        "nvidia": [_gpu_facts(i, g) for i, g in enumerate(nvidia_box_gpus(host))],
        "amd": [_gpu_facts(i, g) for i, g in enumerate(amd)],
        "rocminfo": listing,
        "driver": DRIVER_VERSION,
    }


def _gpu_facts(index: int, gpu: Gpu) -> dict[str, object]:
    major, minor = gpu.capability
    return {
        "index": index,
        "name": gpu.name,
        "arch": gpu.base_arch,
        "compute_cap": f"{major}.{minor}",
        "uuid": gpu.uuid or f"GPU-devsim-{index:04d}",
        "pci.bus_id": f"00000000:{0x10 + index:02X}:00.0",
        "memory.total": "81559 MiB",
    }


def write_shims(folder: Path, host: Host, profile: str) -> list[Path]:
    """Write the four tools into `folder` (created if needed); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    facts = json.dumps(host_facts(host, profile))
    written = []
    for tool in TOOLS:
        path = folder / tool
        path.write_text(f"#!{sys.executable} -I\nTOOL = {tool!r}\nFACTS = {facts!r}\n{_SCRIPT}")
        path.chmod(0o755)
        written.append(path)
    return written


# The body every tool shares: standard library only, so it runs isolated (`python -I`) in a second or less.
_SCRIPT = r'''
import json, os, sys

facts = json.loads(FACTS)
args = sys.argv[1:]


def refuse(why):
    sys.stderr.write(f"{TOOL}: {why}: this is devsim's simulation of host profile {facts['profile']}, which "
                     f"answers only the common queries (see devsim_subject_kit.shims)\n")
    sys.exit(2)


def nvidia_smi():
    gpus = facts["nvidia"]
    if not gpus:
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
              "latest NVIDIA driver is installed and running.")
        sys.exit(9)
    query, form, only, rest = None, "csv", None, list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("-L", "--list-gpus"):
            for g in gpus:
                print(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})")
            return
        key, _, value = arg.partition("=")
        if key in ("--query-gpu", "--format", "-i", "--id") and not value:
            if not rest:
                refuse(f"{arg} needs a value")
            value = rest.pop(0)
        if key == "--query-gpu":
            query = [f.strip() for f in value.split(",") if f.strip()]
        elif key == "--format":
            form = value
        elif key in ("-i", "--id"):
            only = [int(i) for i in value.split(",")]
        else:
            refuse(f"option {arg!r} is not simulated")
    chosen = [g for g in gpus if only is None or g["index"] in only]
    if query is None:
        print(f"NVIDIA-SMI {facts['driver']['nvidia']}    Driver Version: {facts['driver']['nvidia']}")
        for g in chosen:
            print(f"|  {g['index']}  {g['name']:<32} | {g['pci.bus_id']} | {g['memory.total']} |")
        return
    options = form.split(",")
    if options[0] != "csv" or any(o.strip() not in ("csv", "noheader", "nounits") for o in options):
        refuse(f"--format={form} is not simulated (csv, noheader, nounits are)")
    fields = {"index", "name", "compute_cap", "uuid", "pci.bus_id", "memory.total", "driver_version", "count"}
    for f in query:
        if f not in fields:
            refuse(f"field {f!r} is not simulated (fields: {', '.join(sorted(fields))})")
    if "noheader" not in options:
        print(", ".join(f + (" [MiB]" if f == "memory.total" else "") for f in query))
    for g in chosen:
        values = []
        for f in query:
            value = {"driver_version": facts["driver"]["nvidia"], "count": len(gpus)}.get(f, g.get(f))
            if f == "memory.total" and "nounits" in options:
                value = str(value).split()[0]
            values.append(str(value))
        print(", ".join(values))


def rocr_listed():
    """The box's AMD GPUs ROCr lists under this process's ROCR_VISIBLE_DEVICES (devsim's model), or None."""
    mask = os.environ.get("ROCR_VISIBLE_DEVICES")
    if mask is None:
        return list(range(len(facts["amd_uuids"])))
    if not facts.get("devsim"):
        return None
    import subprocess
    line = json.dumps({"build": "hip", "uuids": facts["amd_uuids"], "env": {"ROCR_VISIBLE_DEVICES": mask}})
    try:
        done = subprocess.run([facts["devsim"], "visible", "--stdin-jsonl"], input=line + "\n",
                              capture_output=True, text=True, timeout=60, check=False)
        answer = json.loads(done.stdout.splitlines()[0])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return None
    return [int(i) for i in answer.get("runtime", [])]


def rocminfo():
    if args:
        refuse(f"arguments {args!r} are not simulated")
    if facts["rocminfo"] is None:
        print("ROCk module is NOT loaded, possibly no GPU devices")
        sys.exit(1)
    listed = rocr_listed()
    if listed is None:
        sys.stdout.write(facts["rocminfo"])
        return
    text = facts["rocminfo_empty"]
    agents = "".join(f"*******\nAgent {n}\n*******\n{facts['rocminfo_agents'][i]}" for n, i in enumerate(listed, 2))
    sys.stdout.write(text.replace("*** Done ***\n", agents + "*** Done ***\n"))


def amd_smi():
    gpus = facts["amd"]
    if args == ["version"]:
        print(f"AMDSMI Tool: 26.0.0+devsim | AMDSMI Library version: 26.0.0 | ROCm version: 7.1.0 | "
              f"amdgpu version: {facts['driver']['amd']}")
        return
    if args[:1] != ["list"] or any(a != "--json" for a in args[1:]):
        refuse(f"{' '.join(args) or '(no arguments)'} is not simulated (list, list --json, version are)")
    if not gpus:
        sys.stderr.write("ERROR: Unable to detect any GPU devices, check amdgpu version and module status\n")
        sys.exit(1)
    rows = [{"gpu": g["index"], "bdf": g["pci.bus_id"][4:].lower(), "uuid": g["uuid"], "kfd_id": 1000 + g["index"],
             "node_id": g["index"] + 1, "partition_id": 0} for g in gpus]
    if "--json" in args:
        print(json.dumps(rows, indent=4))
        return
    for row in rows:
        print(f"GPU: {row['gpu']}\n    BDF: {row['bdf']}\n    UUID: {row['uuid']}\n    KFD_ID: {row['kfd_id']}\n"
              f"    NODE_ID: {row['node_id']}\n    PARTITION_ID: 0\n")


def rocm_smi():
    gpus = facts["amd"]
    known = {(), ("--showproductname",), ("-i",), ("--showid",)}
    if tuple(args) not in known:
        refuse(f"{' '.join(args)} is not simulated (no arguments, --showproductname, -i/--showid are)")
    if not gpus:
        print("ERROR:root:Driver not initialized (amdgpu not found in modules)")
        sys.exit(1)
    print("\n============================ ROCm System Management Interface ============================")
    for g in gpus:
        if args == ["--showproductname"]:
            print(f"GPU[{g['index']}]\t\t: Card Series: \t\t{g['name']}")
            print(f"GPU[{g['index']}]\t\t: Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]")
            print(f"GPU[{g['index']}]\t\t: GFX Version: \t\t{g['arch']}")
        elif args:
            print(f"GPU[{g['index']}]\t\t: Device Name: \t\t{g['name']}")
        else:
            print(f"{g['index']}       {g['arch']:<10} {g['name']}")
    print("================================== End of ROCm SMI Log ===================================")


{"nvidia-smi": nvidia_smi, "rocminfo": rocminfo, "amd-smi": amd_smi, "rocm-smi": rocm_smi}[TOOL]()
'''
