"""Every seed-named fix observable on its own: runs the seed-fix subject (subjects/gptqmodel-seedfix.toml) once per
unit of the overlay (seedfix.UNITS) with that unit left at GPTQModel 7.7.0 (DEVSIM_GPTQMODEL_OVERLAY_REVERT), and
writes, between the revert-table markers of subjects/gptqmodel/README.md, how many scenarios fail and which. The
overlay itself passes the corpus (baseline-seedfix.toml), so each failure is that one revert's. Exits 1 when a
unit is caught by no scenario (unless `GAPS` says why none can be yet) or a unit in `GAPS` is caught, 2 when a
run breaks down. Run from anywhere, with the torch venv's bin first on PATH
(python3 is the subject's interpreter):

    python3 subjects/gptqmodel/tools/reverts.py [--devsim BIN] [--subject-src DIR] [--unit NAME ...] [--jobs N]

`--unit` runs only the named units and leaves the README alone; `--jobs` runs that many units side by side
(each devsim run then starts its subject `--subject-jobs` times)."""

from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

HERE = pathlib.Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent
SEEDFIX = HERE / "src" / "devsim_subject_gptqmodel" / "seedfix.py"
SUBJECT = REPO / "subjects" / "gptqmodel-seedfix.toml"
README = HERE / "README.md"
BEGIN = "<!-- reverts:begin (tools/reverts.py writes this table) -->"
END = "<!-- reverts:end -->"
REVERT_ENV = "DEVSIM_GPTQMODEL_OVERLAY_REVERT"
SHOWN = 3  # scenario names shown per unit

# Units no scenario can catch yet, each with why: the table shows the reason, and the run fails when one of them
# is caught after all (drop it from here then) as when any other unit is caught by nothing.
GAPS = {
    "BitsAndBytesLinear.SUPPORTS_DEVICES": "a declaration is the subject's own contract: devsim judges a subject "
    "against the families its kernels declare (docs/conformance.md), so BitsAndBytes declaring CPU and CUDA and "
    "refusing ROCm is consistent, and selection's `selected = \"bitsandbytes\"` on HIP is a reference-catalog "
    "fact, not applicable to a subject",
    "ExllamaV3TorchLinear.validate_device": "a declaration alone (DEVICE.ALL): the portable EXL3 wrapper is no "
    "quant-linear, so GPTQModel gates it nowhere (validate and move are undecided) and its forward runs on every "
    "family either way; a kernel that declares no family is held to no declaration, so nothing observable changes",
    "TorchFP4Linear.validate_device": "a declaration alone (CPU and NVIDIA): the source-FP4 wrapper is no "
    "quant-linear, so GPTQModel gates it nowhere (validate and move are undecided), and its module takes "
    "NVFP4 checkpoint tensors the simulated warmup does not build, so its forward is not observed",
}


@dataclass(frozen=True)
class Result:
    unit: str
    failed: list[str]
    seconds: float


def units() -> list[str]:
    """The overlay's unit names, in its order, read from seedfix.py's `UNITS` literal (no GPTQModel import)."""
    tree = ast.parse(SEEDFIX.read_text(), str(SEEDFIX))
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "UNITS"
            and isinstance(node.value, ast.Dict)
        ):
            return [key.value for key in node.value.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    sys.exit(f"reverts.py: failed to find the UNITS table in {SEEDFIX}")


def run(devsim: str, unit: str, subject_src: str | None, jobs: int | None) -> Result:
    """One devsim run of the seed-fix subject with `unit` reverted; the failed scenarios' names."""
    command = [devsim, "run", "--quiet", "--format", "json", "--subject", str(SUBJECT)]
    if subject_src is not None:
        command += ["--subject-src", subject_src]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    env = {**os.environ, REVERT_ENV: unit}
    start = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr[-4000:])
        print(f"reverts.py: devsim run with {REVERT_ENV}={unit} exited {done.returncode}", file=sys.stderr)
        sys.exit(2)
    report = json.loads(done.stdout)
    errored = [s["name"] for s in report["scenarios"] if s["status"] == "errored"]
    if errored or report.get("load_errors"):
        print(f"reverts.py: with {unit} reverted, devsim failed to run {errored or report['load_errors']}", file=sys.stderr)
        sys.exit(2)
    failed = sorted(s["name"] for s in report["scenarios"] if s["status"] == "failed")
    return Result(unit, failed, seconds)


def table(results: list[Result]) -> str:
    lines = [
        BEGIN,
        "",
        "| reverted to 7.7.0 (`DEVSIM_GPTQMODEL_OVERLAY_REVERT`) | failing scenarios | first of them |",
        "|---|---|---|",
    ]
    for result in results:
        shown = ", ".join(f"`{name}`" for name in result.failed[:SHOWN])
        more = f", and {len(result.failed) - SHOWN} more" if len(result.failed) > SHOWN else ""
        if not result.failed:
            shown = f"**none**: {GAPS.get(result.unit, 'no scenario catches it')}"
        lines.append(f"| `{result.unit}` | {len(result.failed)} | {shown}{more} |")
    lines += ["", END]
    return "\n".join(lines)


def write(results: list[Result]) -> None:
    text = README.read_text()
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"reverts.py: failed to find the markers {BEGIN!r} and {END!r} in {README}")
    README.write_text(text[:begin] + table(results) + text[end + len(END) :])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devsim", default=str(REPO / "target" / "release" / "devsim"), help="the devsim binary")
    parser.add_argument("--subject-src", help="the GPTQModel tree judged (default: the subject file's `source`)")
    parser.add_argument("--unit", action="append", help="only this unit (repeatable); the README is left alone")
    parser.add_argument("--jobs", type=int, default=1, help="units run side by side")
    parser.add_argument("--subject-jobs", type=int, help="devsim run --jobs for each run")
    args = parser.parse_args()
    known = units()
    chosen = args.unit or known
    unknown = [name for name in chosen if name not in known]
    if unknown:
        sys.exit(f"reverts.py: no unit {', '.join(unknown)}; one of: {', '.join(known)}")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda unit: run(args.devsim, unit, args.subject_src, args.subject_jobs), chosen))
    for result in results:
        print(f"{result.unit}: {len(result.failed)} failed ({result.seconds:.1f} s)")
    if args.unit is None:
        write(results)
    status = 0
    uncaught = [result.unit for result in results if not result.failed and result.unit not in GAPS]
    if uncaught:
        print(f"reverts.py: no scenario catches the revert of {', '.join(uncaught)}", file=sys.stderr)
        status = 1
    stale = [result.unit for result in results if result.failed and result.unit in GAPS]
    if stale:
        print(f"reverts.py: {', '.join(stale)} is caught now: drop it from GAPS", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
