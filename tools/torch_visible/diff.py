"""Differential test: devsim's torch view against PyTorch's own `torch.cuda.device_count()`.

Generates visible-device masks (CUDA and HIP builds; index lists with signs, words, spaces, repeats,
negatives, Unicode digits; ROCR_VISIBLE_DEVICES with and without HIP_VISIBLE_DEVICES; GPU-/MIG- ids against
the host's UUIDs), asks devsim for both views in one process (`devsim visible --stdin-jsonl`), then runs
PyTorch's real `device_count` on each with only the hardware queries replaced: `torch.version.hip` set for
HIP builds, NVML's and amdsmi's raw count and UUID queries answering the host's GPUs, and
`torch._C._cuda_getDeviceCount` (torch's fallback where it skips NVML) answering devsim's runtime count.
A PyTorch exception must be the same error kind in devsim. Any disagreement fails.

    .venv-torch/bin/python tools/torch_visible/diff.py --devsim target/debug/devsim --cases 120000
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

import torch
import torch.cuda as tc

VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

WORDS = ["a", "gpu", "one", "two", "x1", "GPU", "mig", "abc"]
ODD_SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u1680", "\u2003", "\u3000", "\x1c", "\x1f", "\x85"]
DIGITS = ["\u0663", "\uff11", "\u0967", "\u00b2", "\u2460", "\U0001d7ce"]


def hexes(rng, n, alphabet="0123456789abcdef"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def host_uuids(rng, build, n):
    # A small alphabet in the first characters makes shared prefixes (ambiguous ids) common.
    if build == "cuda":
        return [
            "GPU-%s%s-%s-%s-%s-%s" % (hexes(rng, 2, "0e9"), hexes(rng, 6), hexes(rng, 4),
                                     hexes(rng, 4), hexes(rng, 4), hexes(rng, 12))
            for _ in range(n)
        ]
    uuids = [hexes(rng, 2, "0a") + hexes(rng, 14) for _ in range(n)]
    return [u.upper() if rng.random() < 0.2 else u for u in uuids]


def index_entry(rng, n):
    r = rng.random()
    if r < 0.45:
        return str(rng.randint(0, n + 2))
    if r < 0.52:
        return rng.choice(["+", "-"]) + str(rng.randint(0, n + 1))
    if r < 0.58:
        return rng.choice(WORDS)
    if r < 0.63:
        return str(rng.randint(0, n)) + rng.choice(WORDS)
    if r < 0.71:
        return rng.choice(ODD_SPACES) + str(rng.randint(0, n)) + rng.choice(ODD_SPACES + [""])
    if r < 0.75:
        return "0" * rng.randint(1, 3) + str(rng.randint(0, n))
    if r < 0.78:
        return str(rng.randint(0, n)) + "0" * 20
    if r < 0.82:
        return ""
    if r < 0.86:
        return rng.choice(DIGITS)
    if r < 0.89:
        return "0x" + str(rng.randint(0, n))
    if r < 0.91:
        return rng.choice(["+", "-", "+a", "-gpu"])
    if r < 0.95:
        return "-" + str(rng.randint(1, 3))
    return rng.choice(["-0", "+0", "00"])


def id_entry(rng, build, uuids, prefix):
    r = rng.random()
    if uuids and r < 0.6:
        uuid = rng.choice(uuids)
        if build == "hip":
            uuid = rng.choice([uuid, uuid.lower(), uuid.upper()])
            body = uuid
        else:
            body = uuid[4:]
        cut = rng.randint(0, len(body))
        return prefix + body[:cut]
    if r < 0.75:
        return prefix + hexes(rng, rng.randint(0, 6))
    if r < 0.85:
        return str(rng.randint(0, len(uuids) + 1))
    if r < 0.9:
        return "MIG-GPU-" + hexes(rng, 2)
    return rng.choice(["GPU-", "MIG-", " GPU-0", "gpu-0", ""])


def mask(rng, build, uuids):
    n = len(uuids)
    r = rng.random()
    if r < 0.05:
        return ""
    length = rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 7])
    if r < 0.72:
        entries = [index_entry(rng, n) for _ in range(length)]
    else:
        prefix = "GPU-" if rng.random() < 0.8 else "MIG-"
        entries = [id_entry(rng, build, uuids, prefix) for _ in range(length)]
        if rng.random() < 0.8:
            entries[0] = id_entry(rng, build, uuids, prefix) if uuids else prefix
    if length > 1 and rng.random() < 0.2:
        entries[rng.randrange(length)] = entries[0]  # a repeat
    if rng.random() < 0.05:
        entries.append("")  # a trailing comma
    return ",".join(entries)


def generate(rng, count):
    fixed = [
        # The example: torch counts ROCR's one entry; ROCr refuses "a".
        {"build": "hip", "uuids": host_uuids(rng, "hip", 3),
         "env": {"ROCR_VISIBLE_DEVICES": "a", "CUDA_VISIBLE_DEVICES": "a,1gpu,0"}},
        {"build": "hip", "uuids": host_uuids(rng, "hip", 2), "env": {"ROCR_VISIBLE_DEVICES": "5"}},
        {"build": "hip", "uuids": host_uuids(rng, "hip", 2), "env": {"ROCR_VISIBLE_DEVICES": "0,0"}},
        {"build": "hip", "uuids": host_uuids(rng, "hip", 2), "env": {"ROCR_VISIBLE_DEVICES": ""}},
        {"build": "hip", "uuids": host_uuids(rng, "hip", 2),
         "env": {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0,1"}},
        {"build": "cuda", "uuids": host_uuids(rng, "cuda", 70), "env": {}},
        {"build": "hip", "uuids": host_uuids(rng, "hip", 66), "env": {}},
    ]
    cases = fixed[:count]
    while len(cases) < count:
        build = rng.choice(["cuda", "hip"])
        n = rng.choice([0, 1, 1, 2, 2, 2, 3, 4, 4, 8])
        uuids = host_uuids(rng, build, n)
        env = {}
        if build == "cuda":
            if rng.random() < 0.9:
                env["CUDA_VISIBLE_DEVICES"] = mask(rng, build, uuids)
            if rng.random() < 0.1:
                env["HIP_VISIBLE_DEVICES"] = mask(rng, build, uuids)
        else:
            for variable, p in (("ROCR_VISIBLE_DEVICES", 0.5), ("HIP_VISIBLE_DEVICES", 0.5),
                                ("CUDA_VISIBLE_DEVICES", 0.4)):
                if rng.random() < p:
                    env[variable] = mask(rng, build, uuids)
        cases.append({"build": build, "uuids": uuids, "env": env})
    return cases


def devsim_views(devsim, cases):
    lines = "".join(json.dumps(case) + "\n" for case in cases)
    done = subprocess.run([devsim, "visible", "--stdin-jsonl"], input=lines.encode(),
                          capture_output=True, check=True)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    if len(answers) != len(cases):
        sys.exit(f"devsim answered {len(answers)} of {len(cases)} cases")
    return answers


class Host:
    """The hardware queries torch makes, answering one simulated host."""

    uuids = []
    runtime_count = 0


def install_fakes():
    tc._raw_device_count_nvml = lambda: len(Host.uuids)
    tc._raw_device_uuid_nvml = lambda: list(Host.uuids)
    tc._raw_device_count_amdsmi = lambda: len(Host.uuids)
    # The real query lower-cases amdsmi's serials; the fake returns what it would.
    tc._raw_device_uuid_amdsmi = lambda: [str(u).lower() for u in Host.uuids]
    torch._C._cuda_getDeviceCount = lambda: Host.runtime_count


def torch_view(case, runtime_count):
    for variable in VARIABLES:
        os.environ.pop(variable, None)
    os.environ.update(case["env"])
    torch.version.hip = "7.0.0" if case["build"] == "hip" else None
    Host.uuids = case["uuids"]
    Host.runtime_count = runtime_count
    tc._cached_device_count = None
    try:
        return {"torch_count": tc.device_count()}
    except ValueError:
        return {"error": "not-an-integer"}
    except RuntimeError as error:
        if "HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES" in str(error):
            return {"error": "hip-wider-than-rocr"}
        return {"error": f"RuntimeError: {error}"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devsim", default="target/debug/devsim")
    parser.add_argument("--cases", type=int, default=120_000)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    if torch.__version__.split("+")[0] != "2.11.0":
        sys.exit(f"devsim follows torch 2.11.0; this is torch {torch.__version__}")
    started = time.monotonic()
    cases = generate(random.Random(args.seed), args.cases)
    answers = devsim_views(args.devsim, cases)
    install_fakes()
    saved = {variable: os.environ.get(variable) for variable in VARIABLES}
    disagreements = []
    tally = {"cuda": 0, "hip": 0, "rocr": 0, "ids": 0, "errors": 0, "views differ": 0}
    try:
        for case, answer in zip(cases, answers):
            runtime = answer.get("runtime", [])
            expected = torch_view(case, len(runtime))
            got = {"error": answer["error"]} if "error" in answer else {
                "torch_count": answer["torch_count"]}
            if got != expected:
                disagreements.append((case, expected, answer))
            tally[case["build"]] += 1
            tally["rocr"] += "ROCR_VISIBLE_DEVICES" in case["env"] and case["build"] == "hip"
            tally["ids"] += any(v.startswith(("GPU-", "MIG-")) for v in case["env"].values())
            tally["errors"] += "error" in expected
            tally["views differ"] += "torch_count" in answer and answer["torch_count"] != len(runtime)
    finally:
        for variable, value in saved.items():
            os.environ.pop(variable, None)
            if value is not None:
                os.environ[variable] = value
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{key} {value}" for key, value in tally.items())
    print(f"{len(cases)} masks against torch {torch.__version__} in {elapsed:.1f}s ({summary}): "
          f"{len(disagreements)} disagreement(s)")
    for case, expected, answer in disagreements[:20]:
        print(f"  {json.dumps(case)}\n    torch: {expected}\n    devsim: {answer}")
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
