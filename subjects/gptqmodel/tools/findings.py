"""Writes subjects/gptqmodel/findings.md: the distinct findings of GPTQModel 7.7.0 as shipped and of the
seed-fix overlay, per policy rule, from the committed baselines (both written by devsim, which attributes
every failure to a rule id by data: docs/conformance.md). Run from anywhere:
python3 subjects/gptqmodel/tools/findings.py [--live-record FILE]   (default: subjects/gptqmodel.toml's live_record)

Each finding ends with its mark (docs/live-record.md): confirmed on a real GPU when the live record given (of
one of the subjects) shows one of its scenarios failed live with the same signature, simulated otherwise."""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import tomllib

HERE = pathlib.Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent
SUBJECTS = {
    "gptqmodel": HERE / "baseline.toml",
    "gptqmodel-seedfix": HERE / "baseline-seedfix.toml",
    "gptqmodel-seedfix2": HERE / "baseline-seedfix2.toml",
}

# Where GPTQModel 7.7.0 makes the decision each rule judges (the seed's own words name these functions).
FUNCTIONS = {
    "declared-families": "each quant-linear's `SUPPORTS_DEVICES` and `BaseQuantLinear.validate_device` "
    "(through `utils.importer._device_family`)",
    "normalize-aliases": "`models._const.normalize_device`, `utils.importer._device_family`",
    "resolve-late": "`utils.looper_helpers._canonical_device` (collapses an indexless accelerator to ordinal 0)",
    "explicit-ordinal-kept": "`models._const.normalize_device` (returns an enum: the ordinal is dropped)",
    "family-move-current": "`utils.looper_helpers._canonical_device` at the module-move boundary",
    "no-cross-vendor-probe": "the kernels' `validate_device` (`torch.cuda.get_device_capability` on ROCm)",
    "family-wide-locks": "`utils.threadx.DeviceThreadPool` (`Unknown device for pool`)",
    "extensions-after-gates": "`nn_modules.exllamav3.ExllamaV3Linear` (no device gate before its extension)",
}

CHECK = re.compile(r"^\[(?P<check>[^\]]+)\]")


def load(path: pathlib.Path) -> dict:
    if not path.exists():
        sys.exit(f"findings.py: failed to read {path}: write it with devsim run --write-baseline")
    return tomllib.loads(path.read_text())


def mark(signature: str, scenarios: list[str], subject: str, record: dict | None) -> str:
    """`confirmed on a real GPU (<devices>, <date>)` when `record` is of `subject` and one of `scenarios` failed
    live with `signature`; `simulated` otherwise (devsim's own rule, src/live_record.rs)."""
    if record is None or record.get("subject") != subject:
        return "simulated"
    live = record.get("scenarios", {})
    for scenario in scenarios:
        seen = live.get(scenario, {})
        if seen.get("outcome") == "failed" and signature in seen.get("findings", []):
            devices = ", ".join(record.get("devices", [])) or "no GPU"
            where = "live through devsim's FAKE DRIVER" if record.get("fake_driver") else "on a real GPU"
            return f"confirmed {where} ({devices}, {record.get('date', '?')})"
    return "simulated"


def digest(data: bytes) -> str:
    """64-bit FNV-1a of `data`, 16 hex digits (src/live_record/corpus.rs)."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def corpus_files(root: pathlib.Path) -> dict[str, str]:
    """Each scenario file under `root` (host profiles in `hosts/` folders excluded, as devsim's loader skips
    them), by its path relative to `root`, → its content's hash."""
    return {
        path.relative_to(root).as_posix(): digest(path.read_bytes())
        for path in sorted(root.rglob("*.toml"))
        if "hosts" not in path.relative_to(root).parts[:-1]
    }


def fingerprint(files: dict[str, str]) -> str:
    """One hash of every file's name and hash, in name order (`CorpusFiles::fingerprint`)."""
    return digest(b"".join(f"{name}\0{value}\n".encode() for name, value in sorted(files.items())))


def staleness(record: dict, files: dict[str, str]) -> list[str]:
    """Why `record` confirms nothing on the corpus `files` (devsim's `LiveRecord::staleness`; the subject version
    is devsim's to check, which knows the installed one): empty when it was taken on this corpus."""
    if "corpus" not in record:
        old = record.get("format")
        return [f"it records no corpus fingerprint (a format {old} record: before records said what they were taken on)"]
    if record["corpus"] == fingerprint(files):
        return []
    taken: dict[str, str] = record.get("files", {})
    parts = []
    for label, names in (
        ("it lacks", [n for n in files if n not in taken]),
        ("changed since", [n for n in files if n in taken and taken[n] != files[n]]),
        ("no longer in the corpus", [n for n in taken if n not in files]),
    ):
        if names:
            more = f", {len(names) - 5} more" if len(names) > 5 else ""
            parts.append(f"{label}: {len(names)} scenario files ({', '.join(names[:5])}{more})")
    return [f"the corpus changed since it was taken ({'; '.join(parts)})"]


README = HERE / "README.md"
BEGIN = "<!-- live-counts: generated by subjects/gptqmodel/tools/findings.py from the live record; do not edit -->"
END = "<!-- /live-counts -->"
COUNTED = ("passed", "failed", "not_applicable", "skipped", "set_aside", "errored")


def live_counts(record: dict | None, shown_as: str, stale: list[str], findings: int, confirmed: int) -> str:
    """The README's live-counts block: what the committed live record counts and whether it confirms anything."""
    if record is None:
        return f"{BEGIN}\nNo live record is committed: every finding is *simulated*.\n{END}"
    outcomes = [live.get("outcome") for live in record.get("scenarios", {}).values()]
    counts = record.get("counts")
    if isinstance(counts, dict):
        counted = ", ".join(f"{counts.get(key, 0)} {key.replace('_', ' ')}" for key in COUNTED if counts.get(key, 0))
    else:
        counted = (
            f"{outcomes.count('passed')} passed, {outcomes.count('failed')} failed (not applicable, skipped and set "
            f"aside not recorded: a format {record.get('format')} record keeps only the scenarios that ran live)"
        )
    head = (
        f"**The committed live record** ({shown_as}: {', '.join(record.get('devices', [])) or 'no GPU'}, "
        f"{record.get('date', '?')}, {record.get('subject')} {record.get('version')}, format {record.get('format')}): "
        f"{counted}."
    )
    if stale:
        verdict = (
            f"It is **stale** and confirms nothing ({'; '.join(stale)}), so `findings.md` marks all {findings} "
            "findings *simulated*."
        )
    else:
        verdict = f"It was taken on this corpus: `findings.md` marks {confirmed} of its {findings} findings *confirmed*."
    return f"{BEGIN}\n{head} {verdict}\n{END}"


def with_block(text: str, block: str) -> str:
    """`text` with its live-counts block replaced by `block` (an error when it has none)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f"findings.py: {README} has no live-counts block ({BEGIN} … {END})")
    return text[:start] + block + text[end + len(END) :]


def read_record(path: pathlib.Path | None) -> dict | None:
    if path is None:
        return None
    try:
        record = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        sys.exit(f"findings.py: failed to read live record {path}: {error}")
    if record.get("format") not in (1, 2):
        sys.exit(f"findings.py: failed to read live record {path}: format {record.get('format')} is not 1 or 2")
    if record.get("subject") not in SUBJECTS:
        sys.exit(f"findings.py: live record {path} records subject {record.get('subject')!r}, not one of {list(SUBJECTS)}")
    return record


def subject_record(subject: str) -> pathlib.Path | None:
    """The `live_record` the subject file `subjects/<subject>.toml` names (relative to that file), if any."""
    spec = REPO / "subjects" / f"{subject}.toml"
    named = tomllib.loads(spec.read_text()).get("live_record")
    return spec.parent / named if isinstance(named, str) else None


def by_check(findings: dict[str, list[str]]) -> dict[str, list[tuple[str, list[str]]]]:
    grouped: dict[str, list[tuple[str, list[str]]]] = {}
    for signature, scenarios in sorted(findings.items()):
        match = CHECK.match(signature)
        check = match.group("check") if match else "(unattributed)"
        grouped.setdefault(check, []).append((signature, scenarios))
    return grouped


def main() -> int:
    parser = argparse.ArgumentParser(description="Write subjects/gptqmodel/findings.md from the baselines.")
    parser.add_argument("--live-record", type=pathlib.Path, help="a live record marking findings confirmed")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when findings.md or the README's block differ"
    )
    arguments = parser.parse_args()
    given = arguments.live_record
    path = given if given is not None else subject_record("gptqmodel")
    record = read_record(path)
    stale = staleness(record, corpus_files(REPO / "scenarios")) if record is not None else []
    if stale:
        print(f"findings.py: live record {path} is stale and confirms nothing: {'; '.join(stale)}", file=sys.stderr)
    rules = tomllib.loads((REPO / "inventory" / "rules.toml").read_text())["rule"]
    runs = {name: load(path) for name, path in SUBJECTS.items()}
    grouped = {name: by_check(run.get("findings", {})) for name, run in runs.items()}
    lines = [
        "# GPTQModel 7.7.0 and two seed fixes: distinct findings by policy rule",
        "",
        "Generated by `python3 subjects/gptqmodel/tools/findings.py` from `baseline.toml` (GPTQModel 7.7.0 as",
        "shipped), `baseline-seedfix.toml` (the same with `seedfix.py`, the seed's fixes written from its",
        "description) and `baseline-seedfix2.toml` (`seedfix2.py`: the same fixes with other valid choices, such as",
        "native EXL3 refused at its first forward with no validate classmethod on the wrappers); do not edit by",
        "hand. devsim attributes each failure to a rule id by data",
        "(`docs/conformance.md`, `inventory/rules.toml`); a finding is one signature, however many scenarios",
        "show it. Where the subject names the GPTQModel function that decided the failing value (`decided_by`,",
        "docs/subject-protocol.md), the signature is the rule and that function; elsewhere the location is unknown.",
        "Each finding ends with its mark (docs/live-record.md): confirmed on a real GPU where a live record",
        "(`--live-record FILE`, by default the `live_record` of `subjects/gptqmodel.toml`) shows one of its",
        "scenarios failed live with the same signature, else simulated; a record taken on another corpus is",
        "stale and confirms nothing.",
        "",
    ]
    committed = record
    shown_as = "none"
    if record is not None:
        shown_path = path.relative_to(REPO).as_posix() if path is not None and path.is_relative_to(REPO) else path
        shown_as = f"`{shown_path}`"
        taken = f"{shown_as} ({', '.join(record.get('devices', [])) or 'no GPU'}, {record.get('date', '?')})"
        if stale:
            lines += [f"The live record {taken} is **stale** and confirms nothing: {'; '.join(stale)}.", ""]
            record = None
        else:
            lines += [f"The live record {taken} was taken on this corpus.", ""]
    marked_of: dict[str, list[str]] = {}
    for name, run in runs.items():
        counts: dict[str, int] = {}
        for outcome in run["outcomes"].values():
            status = outcome.split(":", 1)[0]
            counts[status] = counts.get(status, 0) + 1
        shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        lines.append(f"- `{name}`: {shown}; {len(run.get('findings', {}))} distinct finding(s).")
    lines += [
        "",
        (
            "| rule | seed bug class | where in GPTQModel 7.7.0 | 7.7.0: findings (scenarios) "
            "| seed-fix: findings (scenarios) | seed-fix 2: findings (scenarios) |"
        ),
        "|---|---|---|---|---|---|",
    ]
    checks = [f"policy:{rule['id']}" for rule in rules]
    extra = sorted({c for g in grouped.values() for c in g} - set(checks))
    titles = {f"policy:{rule['id']}": rule["title"] for rule in rules}
    for check in checks + extra:
        cells = []
        for name in runs:
            found = grouped[name].get(check, [])
            shown_by = {s for _, ss in found for s in ss}
            cells.append(f"{len(found)} ({len(shown_by)})")
        rule_id = check.removeprefix("policy:")
        lines.append(
            f"| `{check}` | {titles.get(check, 'not a policy rule')} | {FUNCTIONS.get(rule_id, '')} "
            f"| {' | '.join(cells)} |"
        )
    for name in runs:
        lines += ["", f"## `{name}`: every finding", ""]
        if not grouped[name]:
            lines.append("None.")
        for found in grouped[name].values():
            for signature, scenarios in found:
                first = ", ".join(f"`{s}`" for s in scenarios[:3])
                more = f" and {len(scenarios) - 3} more" if len(scenarios) > 3 else ""
                marked = mark(signature, scenarios, name, record)
                marked_of.setdefault(name, []).append(marked)
                lines.append(
                    f"- {signature.replace('|', '/')} — {len(scenarios)} scenario(s): {first}{more} — {marked}"
                )
    subject = committed.get("subject", "gptqmodel") if committed is not None else "gptqmodel"
    marks = marked_of.get(subject, [])
    confirmed = sum(m.startswith("confirmed") for m in marks)
    block = live_counts(committed, shown_as, stale, len(marks), confirmed)
    outputs = {HERE / "findings.md": "\n".join(lines) + "\n", README: with_block(README.read_text(), block)}
    if arguments.check:
        differ = [path.name for path, text in outputs.items() if path.read_text() != text]
        for name in differ:
            print(f"findings.py: {name} differs from what the baselines and the live record give", file=sys.stderr)
        return 1 if differ else 0
    for path, text in outputs.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
