"""Dumps GPTQModel's module-level constants (JSON on the real stdout) after one of two routes to a host.

    python constants_probe.py fresh HOST_JSON     import GPTQModel with the simulated host already in place
    python constants_probe.py rebind HOSTS_JSON   import on the CPU build, then per host a forked child that
                                                  enters it the way the subject does (prints one dump a line)
"""

from __future__ import annotations

import json
import os
import sys


def simple(value, torch):
    if isinstance(value, (bool, int, float, str, type(None), torch.device)):
        return repr(value)
    if isinstance(value, (list, tuple, frozenset, set)) and all(
        isinstance(v, (bool, int, float, str, type(None), torch.device)) for v in value
    ):
        return repr(sorted(map(repr, value)) if isinstance(value, (set, frozenset)) else value)
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (bool, int, float, str, type(None), torch.device))
        for k, v in value.items()
    ):
        return repr(sorted(value.items()))
    return None


def dump() -> dict:
    import torch

    out = {}
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("gptqmodel") or mod is None:
            continue
        for key, value in vars(mod).items():
            if key.startswith("__"):
                continue
            text = simple(value, torch)
            if text is not None:
                out[f"{name}.{key}"] = text
    return out


def main() -> None:
    from devsim_subject_kit.protocol import claim_stdout
    from devsim_subject_kit.server import prepare_environment

    prepare_environment({"BUILD_CUDA_EXT": "0"})
    out = claim_stdout()
    from devsim_subject_gptqmodel.subject import Subject
    from devsim_subject_kit import Host

    mode, arg = sys.argv[1], json.loads(sys.argv[2])
    subject = Subject()
    if mode == "fresh":
        subject.load(import_host=Host.from_message(arg))
        out.write((json.dumps(dump()) + "\n").encode())
        return
    subject.load()
    for host in arg:
        pid = os.fork()
        if pid == 0:
            subject.enter(Host.from_message(host))
            out.write((json.dumps(dump()) + "\n").encode())
            os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
