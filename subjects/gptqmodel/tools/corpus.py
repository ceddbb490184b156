"""Runs devsim's scenario corpus through the subject with a stand-in for devsim's client (Python).

    python tools/corpus.py [SCENARIO_DIR] [--json OUT]

It is a smoke test and a preview, not the judge: devsim's Rust client owns host resolution, selector forms
and the comparison. Here hosts come from the profiles plus inline keys, visible devices follow PyTorch's
rules in a simplified form (ROCR, then HIP or CUDA; integer lists stop at the first missing ordinal), and a
handful of expectation keys are compared so that a run shows where GPTQModel 7.7.0 disagrees with devsim.
Scenarios with [[host.fault]] are not sent (the protocol has no faults). Exit status: non-zero only when the
subject broke the protocol or crashed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import MISSING, REPO, subject_env
from fakedevsim import Driver, ProtocolViolation

DEFAULT_NAMES = {"sm": "NVIDIA GPU", "gfx": "AMD GPU"}
FAMILIES = {"cpu", "cuda", "rocm", "xpu", "mps"}
CHECKED = ("ok", "family", "ordinal", "torch_device", "lands_on", "ran_on", "current_after", "selected", "covers")


def load_host(scenario: dict, hosts_dir: Path) -> dict:
    spec = dict(scenario.get("host", {}))
    base = {}
    if "profile" in spec:
        base = tomllib.loads((hosts_dir / f"{spec['profile']}.toml").read_text())
    merged = {**base, **{k: v for k, v in spec.items() if k != "profile"}}
    gpus = merged.get("gpu") or [{"arch": a} for a in merged.get("gpus", [])]
    if spec.get("gpu"):
        gpus = spec["gpu"]
    elif "gpus" in spec:
        gpus = [{"arch": a} for a in spec["gpus"]]

    def full(g: dict, i: int) -> dict:
        arch = g["arch"]
        return {
            "arch": arch,
            "name": g.get("name") or f"{DEFAULT_NAMES['sm' if arch.startswith('sm_') else 'gfx']} {arch}",
            "smem_optin": g.get("smem_optin", 65536),
            "uuid": g.get("uuid", f"GPU-{i:08x}-0000-0000-0000-000000000000"),
        }

    gpus = [full(g, i) for i, g in enumerate(gpus)]
    foreign = [full({"arch": a} if isinstance(a, str) else a, 100 + i)
               for i, a in enumerate(merged.get("foreign_gpus", []))]
    env = dict(merged.get("env", {}))
    return {
        "torch": merged.get("torch", "cpu"),
        "gpus": gpus,
        "foreign_gpus": foreign,
        "env": env,
        "visible": visible(merged.get("torch", "cpu"), gpus, env),
        "current": merged.get("current", 0),
    }


def _mask(value: str, candidates: list[int], gpus: list[dict]) -> list[int]:
    picked: list[int] = []
    for token in (t.strip() for t in value.split(",")):
        if token.startswith("GPU-"):
            match = [c for c in candidates if gpus[c]["uuid"].startswith(token)]
            if len(match) != 1:
                break
            index = match[0]
        elif re.fullmatch(r"-?\d+", token or "x") and 0 <= int(token) < len(candidates):
            index = candidates[int(token)]
        else:
            break
        if index in picked:
            return []
        picked.append(index)
    return picked


def visible(build: str, gpus: list[dict], env: dict) -> list[int]:
    if build == "cpu":
        return []
    order = list(range(len(gpus)))
    if build == "hip":
        if "ROCR_VISIBLE_DEVICES" in env:
            order = _mask(env["ROCR_VISIBLE_DEVICES"], order, gpus)
        key = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
    else:
        key = "CUDA_VISIBLE_DEVICES"
    if key in env:
        order = _mask(env[key], order, gpus)
    return order


def selector(value) -> dict:
    if isinstance(value, int):
        return {"written": value, "form": "ordinal"}
    text = str(value)
    match = re.fullmatch(r"(?i)device\.([a-z]+)", text.strip())
    if match and match.group(1).lower() in FAMILIES:
        return {"family": match.group(1).lower(), "form": "family_enum"}
    match = re.fullmatch(r"(?:torch\.)?device\((.*)\)", text.strip())
    if match:
        args = [a.strip().strip("'\"") for a in match.group(1).split(",")]
        named = dict(a.split("=", 1) for a in args if "=" in a)
        positional = [a for a in args if "=" not in a]
        kind = (named.get("type") or (positional[0] if positional else "")).strip("'\"")
        index = named.get("index") or (positional[1] if len(positional) > 1 else None)
        if ":" in kind:
            kind, index = kind.split(":", 1)
        if re.fullmatch(r"[a-z]+", kind or "") and (index is None or re.fullmatch(r"\d+", str(index))):
            return {"device_type": kind, "index": None if index is None else int(index), "form": "torch_device"}
    return {"written": text, "form": "string"}


def step_message(step: dict) -> dict:
    msg = {"action": step["action"]}
    for key in ("kernel", "method", "bits", "ordinal", "mode"):
        if key in step:
            msg[key] = step[key]
    if "device" in step:
        msg["device"] = selector(step["device"])
    if "scope" in step:
        msg["scope"] = selector(step["scope"])
        msg.setdefault("mode", "read")
    return msg


def compare(expect: dict, answer: dict) -> list[str]:
    differences = []
    if answer["type"] != "observed":
        return differences
    if "error" in expect or expect.get("ok") is False:
        if answer["ok"]:
            differences.append(f"ok: expected false ({expect.get('error')}), got true")
        elif "error" in expect and answer["error"]["kind"] != expect["error"]:
            differences.append(f"error: expected {expect['error']}, got {answer['error']['kind']} "
                               f"({answer['error']['message'][:80]})")
    elif not answer["ok"]:
        differences.append(f"ok: expected true, got {answer['error']}")
    for key in CHECKED[1:]:
        if key not in expect:
            continue
        want = None if expect[key] == "none" else expect[key]
        if key not in answer:
            differences.append(f"{key}: expected {want!r}, not produced")
        elif answer[key] != want:
            differences.append(f"{key}: expected {want!r}, got {answer[key]!r}")
    rules = expect.get("trace", {})
    events = [e["event"] for e in answer["trace"]]
    for name in rules.get("never", []):
        if name in events:
            differences.append(f"trace: {name} must never happen, happened")
    return differences


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenarios", nargs="?", default=str(REPO / "scenarios"))
    parser.add_argument("--json")
    args = parser.parse_args()
    if MISSING:
        print(MISSING, file=sys.stderr)
        return 2
    root = Path(args.scenarios)
    hosts_dir = REPO / "scenarios" / "hosts"
    files = sorted(p for p in root.rglob("*.toml") if "hosts" not in p.parts)
    driver = Driver(subject_env())
    handshake = driver.hello()
    recorded = set(handshake["events"])
    outcome: Counter = Counter()
    report = []
    for path in files:
        scenario = tomllib.loads(path.read_text())
        name = str(path.relative_to(REPO / "scenarios")) if path.is_relative_to(REPO / "scenarios") else path.name
        if scenario.get("host", {}).get("fault"):
            outcome["not sent (faults)"] += 1
            continue
        host = load_host(scenario, hosts_dir)
        steps = scenario.get("step", [])
        unsupported_action = next((s["action"] for s in steps if s["action"] not in handshake["actions"]), None)
        if unsupported_action:
            outcome[f"skipped: action {unsupported_action}"] += 1
            continue
        result = driver.scenario(host, [step_message(s) for s in steps], name=name)
        entry = {"scenario": name, "start": result["start"]["type"], "steps": []}
        if result["start"]["type"] != "ready":
            outcome["skipped: host"] += 1
            report.append(entry)
            continue
        failed = skipped = False
        for step, answer in zip(steps, result["answers"]):
            if answer["type"] == "unsupported":
                skipped = True
                entry["steps"].append({"unsupported": answer["reason"]})
                continue
            expect = dict(step.get("expect", {}))
            diffs = compare(expect, answer)
            failed |= bool(diffs)
            entry["steps"].append({"answer": answer, "differences": diffs})
        whole = scenario.get("expect", {}).get("trace", {})
        for name_ in whole.get("never", []):
            if any(e["event"] == name_ for a in result["answers"] if a["type"] == "observed" for e in a["trace"]):
                failed = True
                entry["steps"].append({"differences": [f"scenario trace: {name_} must never happen, happened"]})
        unrecorded = {e for rules in [whole] + [s.get("expect", {}).get("trace", {}) for s in steps]
                      for key in ("never", "once", "order") for e in rules.get(key, [])} - recorded
        unrecorded |= {e for rules in [whole] + [s.get("expect", {}).get("trace", {}) for s in steps]
                       for e in rules.get("count", {})} - recorded
        verdict = "differs" if failed else ("skipped" if skipped else ("unjudgeable trace" if unrecorded else "agrees"))
        entry["verdict"] = verdict
        outcome[verdict] += 1
        report.append(entry)
    code = driver.close()
    for key, count in sorted(outcome.items()):
        print(f"{count:4d}  {key}")
    print(f"subject exit status {code}; {len(files)} files")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProtocolViolation as exc:
        print(f"PROTOCOL VIOLATION: {exc}", file=sys.stderr)
        sys.exit(1)
