"""Protocol v2 (the subject's own contract), the adapter fixes, and the seed-fix overlay."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest
from conftest import PACKAGE
from fakedevsim import CPU, H200X2, R9700X2, Driver, fam, host, o, s, tdev

OBSERVED = {"ok", "error", "family", "ordinal", "torch_device", "ran_on", "lands_on", "current_after", "selected",
            "covers", "vendor", "archs", "torch_device_count", "runtime_devices", "retained_bytes"}
DEVICE_FAMILIES = {"cuda": "cuda", "rocm": "rocm", "cpu": "cpu", "xpu": "xpu", "mps": "mps", "all": "all"}
KERNELS = tomllib.loads((PACKAGE / "devsim_subject_gptqmodel" / "kernels.toml").read_text())


@pytest.fixture(scope="module")
def v2(env):
    d = Driver(env)
    d.hello(protocol=2)
    yield d
    assert d.close() == 0, d.stderr_text()[-4000:]


@pytest.fixture(scope="module", params=["seedfix", "seedfix2"])
def seedfix(env, request):
    """Each seed-fix variant: seedfix.py, and seedfix2.py with other valid choices (judged the same way)."""
    d = Driver({**env, "DEVSIM_GPTQMODEL_OVERLAY": request.param})
    d.hello(protocol=2)
    d.variant = request.param
    yield d
    assert d.close() == 0, d.stderr_text()[-4000:]


def load_class(source: str):
    module, name = source.split(":")
    return getattr(importlib.import_module(module), name)


# ------------------------------------------------------------------------------------------------ handshake


def test_v1_hello_gets_exactly_the_v1_handshake(driver):
    assert set(driver.handshake) == {"type", "protocol", "subject", "actions", "kernels", "events"}
    assert driver.handshake["protocol"] == 1
    assert all(isinstance(k, str) for k in driver.handshake["kernels"])


def test_v2_handshake_declares_the_subjects_contract(v2, driver):
    hs = v2.handshake
    assert hs["protocol"] == 2
    assert hs["subject"] == {"name": "gptqmodel", "version": "7.7.0"}
    assert hs["messages"] == "own" and hs["levels"] == ["policy", "contract"]
    assert hs["actions"] == driver.handshake["actions"] and hs["events"] == driver.handshake["events"]
    names = [k["name"] for k in hs["kernels"]]
    assert names == driver.handshake["kernels"]  # the same kernels, each declared once
    assert len(set(names)) == len(names)
    for decl in hs["kernels"]:
        assert set(decl) == {"name", "families", "methods", "bits", "source"}
        assert set(decl["families"]) <= set(DEVICE_FAMILIES.values())
    assert set(hs["observes"]) == set(hs["actions"])
    for action, fields in hs["observes"].items():
        assert set(fields) <= OBSERVED, action
    assert "ordinal" not in hs["observes"]["normalize"]


def test_a_later_devsim_gets_the_highest_common_version(env):
    d = Driver(env)
    assert d.hello(protocol=3)["protocol"] == 2
    assert d.close() == 0


def test_every_declared_family_is_the_classs_own(v2, gptqmodel_path):
    """Families are read from SUPPORTS_DEVICES (NPU, which devsim lacks, left out); bits from SUPPORTS_BITS."""
    for decl in v2.handshake["kernels"]:
        cls = load_class(decl["source"])
        declared = [str(getattr(d, "value", d)) for d in getattr(cls, "SUPPORTS_DEVICES", None) or []]
        assert decl["families"] == [DEVICE_FAMILIES[d] for d in declared if d in DEVICE_FAMILIES], decl["name"]
        assert decl["bits"] == sorted(getattr(cls, "SUPPORTS_BITS", None) or []), decl["name"]
        entry = KERNELS["kernel"][decl["name"]]
        assert decl["source"] == f"{entry['module']}:{entry['class']}"


def test_every_registered_quant_linear_is_mapped_or_named_in_the_header(gptqmodel_path):
    from gptqmodel.utils.importer import iter_quant_linear_kernels

    header = (PACKAGE / "devsim_subject_gptqmodel" / "kernels.toml").read_text().split("[kernel.")[0]
    mapped = {entry["class"] for entry in KERNELS["kernel"].values()}
    for cls in iter_quant_linear_kernels():
        assert cls.__name__ in mapped or cls.__name__ in header, cls


def test_exl3_and_fp4_map_to_the_7_7_0_wrappers(v2):
    by_name = {k["name"]: k for k in v2.handshake["kernels"]}
    assert by_name["exl3_exllama_v3"]["source"] == "gptqmodel.nn_modules.exllamav3:ExllamaV3Linear"
    assert by_name["exl3_torch"]["source"] == "gptqmodel.nn_modules.exllamav3_torch:ExllamaV3TorchLinear"
    assert by_name["fp4_source"]["source"] == "gptqmodel.nn_modules.qlinear.fp4:TorchFP4Linear"
    assert by_name["exl3_exllama_v3"]["families"] == []  # 7.7.0 declares no devices for them


# ------------------------------------------------------------------------------------------------ adapter fixes


def test_ordinal_is_read_at_the_torch_boundary(v2):
    """resolve/move report the torch.device GPTQModel builds: an explicit ordinal survives, the 7.7.0 family
    conversion (normalize_device_like: indexless -> :0) shows as ordinal 0, never a null by construction."""
    result = v2.scenario(R9700X2, [
        {"action": "resolve", "device": s("cuda:1")},
        {"action": "resolve", "device": fam("rocm")},
        {"action": "resolve", "device": o(1)},
        {"action": "normalize", "device": s("cuda:1")},
        {"action": "move", "kernel": "gptq_torch", "device": tdev("cuda", 1)},
    ])
    explicit, family, ordinal, normalize, move = result["answers"]
    assert (explicit["torch_device"], explicit["ordinal"]) == ("cuda:1", 1)
    assert (family["torch_device"], family["ordinal"]) == ("cuda:0", 0)
    assert (ordinal["torch_device"], ordinal["ordinal"]) == ("cuda:1", 1)
    assert "ordinal" not in normalize and "torch_device" not in normalize
    assert (move["torch_device"], move["ordinal"], move["lands_on"]) == ("cuda:1", 1, 1)


def test_move_applies_the_kernels_own_gate(v2):
    """The move path validates the kernel (a CPU-only kernel cannot be moved to a GPU family; a portable one can)."""
    result = v2.scenario(H200X2, [
        {"action": "move", "kernel": "gptq_torch_aten", "device": s("cuda")},
        {"action": "move", "kernel": "gptq_torch", "device": s("cuda")},
    ])
    aten, torch_kernel = result["answers"]
    assert aten["ok"] is False and aten["error"]["kind"] == "unsupported-family"
    assert "lands_on" not in aten
    assert torch_kernel["ok"] is True and torch_kernel["lands_on"] == 0


def test_selector_view_covers_the_rocm_string(v2):
    answer = v2.step(R9700X2, {"action": "validate", "kernel": "gptq_torch", "device": s("rocm")})
    assert answer["ok"] is True and answer["family"] == "rocm" and answer["ordinal"] is None


def test_runtime_unavailable_is_classified_by_its_swallowed_cause(v2):
    """'Swordfish runtime unavailable.' hides the extension API's build-support refusal; its reason classifies."""
    h200 = host("cuda", [H200X2["gpus"][0]])
    arch = v2.step(h200, {"action": "validate", "kernel": "awq_swordfish", "device": s("cuda")})
    assert arch["error"] == {"kind": "unsupported-arch", "message": "Swordfish runtime unavailable."}
    family = v2.step(R9700X2, {"action": "validate", "kernel": "gptq_swordfish", "device": tdev("cuda", 0)})
    assert family["error"] == {"kind": "unsupported-family", "message": "Swordfish runtime unavailable."}


def test_exl3_selection_is_the_loaders_undecided_pick(v2):
    """The EXL3 module is picked inline in the model loader, by backend: nothing the subject can call decides it."""
    answer = v2.step(R9700X2, {"action": "select", "method": "exl3", "bits": 4, "device": s("cuda")})
    assert answer["ok"] is True and "selected" not in answer
    assert "from_quantized" in answer["undecided"]["selected"]
    assert answer["family"] == "rocm"  # the device conversion before the pick is GPTQModel's, and observed


def test_a_wrapper_without_a_gate_decides_nothing_at_validate_and_move(v2, seedfix):
    """7.7.0's EXL3/FP4 wrappers have no validate(): no gate of GPTQModel's runs, whatever a fix adds to them."""
    steps = [{"action": "validate", "kernel": "exl3_exllama_v3", "device": s("cuda")},
             {"action": "move", "kernel": "fp4_source", "device": s("cuda:1")}]
    for driver in (v2, seedfix):
        for answer in driver.scenario(R9700X2, steps)["answers"]:
            assert answer["ok"] is True and "no validate()" in answer["undecided"]["ok"], answer
            assert "ok" not in answer.get("decided_by", {})


# ------------------------------------------------------------------------------------------------ the overlay


def test_overlay_names_itself(seedfix):
    variant = seedfix.variant
    assert seedfix.handshake["subject"] == {"name": f"gptqmodel-{variant}", "version": f"7.7.0+{variant}"}
    by_name = {k["name"]: k for k in seedfix.handshake["kernels"]}
    assert "rocm" in by_name["bitsandbytes"]["families"]
    assert by_name["exl3_exllama_v3"]["families"] == ["cuda"]
    assert by_name["exl3_torch"]["families"] == ["all"]
    assert by_name["fp4_source"]["families"] == ["cpu", "cuda"]


@pytest.mark.parametrize("variant", ["seedfix", "seedfix2"])
def test_overlay_subject_file_matches_the_plain_one(variant):
    subjects = PACKAGE.parents[1]
    plain = tomllib.loads((subjects / "gptqmodel.toml").read_text())
    fixed = tomllib.loads((subjects / f"gptqmodel-{variant}.toml").read_text())
    assert fixed["name"] == f"gptqmodel-{variant}"
    assert fixed["env"] == {**plain["env"], "DEVSIM_GPTQMODEL_OVERLAY": variant}
    # a live record is one subject's own (the overlay never ran live): the plain file's names 7.7.0's
    assert "live_record" not in fixed
    own = ("name", "env", "live_record")
    assert {k: v for k, v in fixed.items() if k not in own} == {k: v for k, v in plain.items() if k not in own}


STEPS = [
    {"action": "normalize", "device": s("cuda:1")},                          # 1 ROCm kept explicit
    {"action": "normalize", "device": o(1)},                                 # 2
    {"action": "normalize", "device": tdev("cuda", 1)},                      # 3
    {"action": "normalize", "device": fam("cuda")},                          # 4
    {"action": "resolve", "device": fam("rocm")},                            # 5 indexless family target
    {"action": "validate", "kernel": "gptq_triton", "device": s("cuda")},    # 6 CUDA-only kernel on ROCm
    {"action": "validate", "kernel": "gptq_torch", "device": s("cuda:1")},   # 7 no NVIDIA probe
    {"action": "lock", "scope": fam("rocm"), "mode": "read"},                # 8 DEVICE.ROCM lock
    {"action": "validate", "kernel": "exl3_exllama_v3", "device": s("cuda")},  # 9 native EXL3 on HIP
    {"action": "set_device", "ordinal": 1},                                  # 10
    {"action": "move", "kernel": "gptq_torch", "device": fam("rocm")},       # 11 family move: current device
    {"action": "warmup", "kernel": "exl3_exllama_v3", "device": s("cuda")},  # 12 native EXL3's first forward
]


def test_overlay_changes_exactly_the_seeds_behaviours(v2, seedfix):
    before = v2.scenario(R9700X2, STEPS)["answers"]
    after = seedfix.scenario(R9700X2, STEPS)["answers"]
    assert [a["family"] for a in before[:4]] == ["cuda"] * 4
    assert [a["family"] for a in after[:4]] == ["rocm"] * 4
    assert before[4]["torch_device"] == "cuda:0" and after[4]["torch_device"] == "cuda"
    assert after[4]["ordinal"] is None
    assert before[5]["ok"] is True
    assert after[5]["ok"] is False and after[5]["error"]["kind"] == "unsupported-family"
    probes = [[e["event"] for e in a["trace"]] for a in (before[6], after[6])]
    assert "nvidia_capability" in probes[0] and "nvidia_capability" not in probes[1]
    assert before[7]["ok"] is False and after[7]["covers"] == ["cuda:0", "cuda:1"]
    assert before[8]["ok"] is after[8]["ok"] is True  # no gate of GPTQModel's at validate: undecided
    assert before[8]["undecided"] == after[8]["undecided"]
    assert (before[10]["lands_on"], after[10]["lands_on"]) == (0, 1)
    # native EXL3's first forward on HIP: 7.7.0 reaches for its extension (not simulated: unsupported); the fix
    # refuses first, naming the portable kernel, and loads nothing
    assert before[11]["type"] == "unsupported" and "exllamav3" in before[11]["reason"].lower()
    assert after[11]["ok"] is False and after[11]["error"]["kind"] == "unsupported-family"
    assert "EXL3_TORCH" in after[11]["error"]["message"]
    assert "extension_load" not in [e["event"] for e in after[11]["trace"]]
    # what the seed does not touch stays as 7.7.0 has it
    for b, a in zip(before[:11], after[:11], strict=True):
        assert b["type"] == a["type"] == "observed"
    strip = {"scenario"}
    assert {k: v for k, v in before[9].items() if k not in strip} == \
        {k: v for k, v in after[9].items() if k not in strip}


def test_overlay_keeps_cpu_and_nvidia_behaviour(v2, seedfix):
    steps = [{"action": "normalize", "device": s("cuda:1")}, {"action": "select", "method": "gptq", "bits": 4,
                                                                "device": s("cuda:0")}]
    for h in (H200X2,):
        assert [a["family"] for a in v2.scenario(h, steps)["answers"]] == \
            [a["family"] for a in seedfix.scenario(h, steps)["answers"]]
    assert v2.step(CPU, steps[1] | {"device": s("cpu")})["selected"] == \
        seedfix.step(CPU, steps[1] | {"device": s("cpu")})["selected"]


def test_overlay_normalize_device_in_process(gptqmodel_path, monkeypatch):
    """normalize_device('cuda:1') on a simulated HIP host: DEVICE.ROCM with the overlay, DEVICE.CUDA without."""
    import subprocess
    import sys

    code = (
        "from devsim_subject_gptqmodel.subject import Subject\n"
        "from devsim_subject_kit import Host\n"
        "import json, sys\n"
        "host = Host.from_message(json.loads(sys.argv[1]))\n"
        "s = Subject(); s.load(); s.enter(host)\n"
        "from gptqmodel.models import _const\n"
        "print('RESULT', _const.normalize_device('cuda:1').value)\n"
    )
    import json
    out = {}
    for overlay in ("", "seedfix"):
        env = {**gptqmodel_path, "DEVSIM_GPTQMODEL_OVERLAY": overlay}
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(R9700X2)], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[overlay] = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT")).split()[1]
    assert out == {"": "cuda", "seedfix": "rocm"}


def test_overlay_units_revert_one_at_a_time(gptqmodel_path):
    """On a simulated HIP host: the default device auto_select_device picks and normalize_device('cuda:1'), under
    7.7.0, the overlay, and the overlay with one unit reverted (DEVSIM_GPTQMODEL_OVERLAY_REVERT): a revert puts
    back 7.7.0's answer for its function only."""
    import json
    import subprocess
    import sys

    code = (
        "from devsim_subject_gptqmodel.subject import Subject\n"
        "from devsim_subject_kit import Host\n"
        "import json, sys\n"
        "host = Host.from_message(json.loads(sys.argv[1]))\n"
        "s = Subject(); s.load(); s.enter(host)\n"
        "from gptqmodel.models import _const, loader\n"
        "print('RESULT', loader.auto_select_device(None, None).value, _const.normalize_device('cuda:1').value)\n"
    )
    out = {}
    for overlay, revert in (("", ""), ("seedfix", ""), ("seedfix", "importer.auto_select_device"),
                            ("seedfix", "normalize_device")):
        env = {**gptqmodel_path, "DEVSIM_GPTQMODEL_OVERLAY": overlay, "DEVSIM_GPTQMODEL_OVERLAY_REVERT": revert}
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(R9700X2)], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[revert or overlay] = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT")).split()[1:]
    assert out == {
        "": ["cuda", "cuda"],
        "seedfix": ["rocm", "rocm"],
        "importer.auto_select_device": ["cuda", "rocm"],
        "normalize_device": ["rocm", "cuda"],
    }


@pytest.mark.parametrize(("overlay", "revert", "message"), [
    ("seedfix", "normalise_device", "names no unit of the overlay; one of: normalize_device, as_torch_device"),
    ("", "normalize_device", "reverts a unit of an overlay, but DEVSIM_GPTQMODEL_OVERLAY is none of seedfix, seedfix2"),
])
def test_unknown_or_unmatched_revert_is_refused(env, overlay, revert, message):
    """A revert name that is no unit is refused, listing the units; so is a revert without the overlay."""
    d = Driver({**env, "DEVSIM_GPTQMODEL_OVERLAY": overlay, "DEVSIM_GPTQMODEL_OVERLAY_REVERT": revert})
    with pytest.raises(AssertionError):
        d.hello(protocol=2)
    assert d.close() != 0
    assert message in d.stderr_text()

def test_unknown_overlay_is_refused(env):
    d = Driver({**env, "DEVSIM_GPTQMODEL_OVERLAY": "typo"})
    with pytest.raises(AssertionError):
        d.hello(protocol=2)
    assert d.close() != 0
    assert "the overlays are seedfix, seedfix2" in d.stderr_text()


@pytest.fixture(scope="module")
def gptqmodel_path(env):
    """GPTQModel importable in this process (for introspection) and the subject's environment."""
    import sys

    for entry in reversed(env["PYTHONPATH"].split(":")):
        if entry and entry not in sys.path:
            sys.path.insert(0, entry)
    _ = Path
    return env


# ------------------------------------------------------------------------------------------------ any selector

# Spellings devsim's corpus sends (normalization/, validation-errors/, family-gate/, pool/) and a few more: none
# may end the subject. What GPTQModel (or the overlay standing in for it) raises is an error observation.
ODD_SELECTORS = [
    s("ROCM:0"), s("rocm:1"), s("hip"), s("hip:1"), s("hip:+0"), s("CPU"), s("cpu:0"), s("CUDA"), s("cuda:x"),
    s("cuda:+1"), s("cuda:-1"), s("cuda:99"), s("0"), s("-1"), s(""), s(" "), s("gpu"), s("DEVICE.ROCM"),
    s("torch.device('cuda')"), s("all"), s("rocm"), s("cuda"), o(-1), o(0), o(99), fam("all"), fam("rocm"),
    fam("cuda"), fam("xpu"), tdev("cuda", 99), tdev("cpu", 0),
]
# Not torch.device("hip", 1): a torch_device selector's type is one of the protocol's (cpu, cuda, xpu, mps), so
# devsim never sends it and the kit refuses it against the protocol's schema.


def odd_selector_steps() -> list[dict]:
    steps: list[dict] = []
    for sel in ODD_SELECTORS:
        steps += [
            {"action": "normalize", "device": sel},
            {"action": "resolve", "device": sel},
            {"action": "validate", "kernel": "gptq_torch", "device": sel},
            {"action": "validate", "kernel": "exl3_torch", "device": sel},
            {"action": "validate", "kernel": "exl3_exllama_v3", "device": sel},
            {"action": "move", "kernel": "gptq_torch", "device": sel},
            {"action": "lock", "scope": sel, "mode": "read"},
            {"action": "lock", "scope": sel, "mode": "write"},
        ]
    return steps


@pytest.mark.parametrize("overlay", ["", "seedfix"])
def test_no_selector_ends_the_subject(env, overlay):
    """Every odd selector through every selector action, on HIP, CUDA and CPU builds, with and without the overlay:
    each step is observed (ok, or an error GPTQModel raised), never a dead child."""
    d = Driver({**env, "DEVSIM_GPTQMODEL_OVERLAY": overlay})
    d.hello(protocol=2)
    steps = odd_selector_steps()
    for h in (R9700X2, H200X2, CPU):
        answers = d.scenario(h, steps)["answers"]
        assert [a["type"] for a in answers] == ["observed"] * len(steps)
        for step, answer in zip(steps, answers, strict=True):
            assert answer["ok"] is ("error" not in answer), (step, answer)
    assert d.close() == 0, d.stderr_text()[-4000:]


def resolved(answer: dict) -> tuple:
    return answer.get("family"), answer.get("torch_device"), answer.get("ordinal")


def test_overlay_boundary_normalizes_first(seedfix):
    """The overlay's as_torch_device normalizes a string or int first (its normalize_device), keeps an explicit
    ordinal and leaves a family indexless; torch judges an ordinal's spelling."""
    result = seedfix.scenario(R9700X2, [
        {"action": "resolve", "device": s("ROCM:0")},
        {"action": "resolve", "device": s("CPU")},
        {"action": "resolve", "device": s("CUDA")},
        {"action": "resolve", "device": s("cuda:1")},
        {"action": "resolve", "device": o(1)},
        {"action": "resolve", "device": o(-1)},
        {"action": "resolve", "device": s("cuda:x")},
        {"action": "resolve", "device": s("cuda:+1")},
        {"action": "validate", "kernel": "exl3_torch", "device": s("hip")},
    ])
    rocm0, cpu, cuda, cuda1, one, negative, malformed, signed, hip = result["answers"]
    assert resolved(rocm0) == ("rocm", "cuda:0", 0)
    assert resolved(cpu) == ("cpu", "cpu", None) and cpu["trace"] == []
    assert resolved(cuda) == ("rocm", "cuda", None)
    assert resolved(cuda1) == resolved(one) == ("rocm", "cuda:1", 1)
    assert negative["error"] == {"kind": "unknown-selector", "message": "Device index must not be negative"}
    assert malformed["error"] == {"kind": "unknown-selector", "message": "Invalid device string: 'cuda:x'"}
    assert signed["error"] == {"kind": "unknown-selector", "message": "Invalid device string: 'cuda:+1'"}
    assert hip["ok"] is False and hip["error"]["kind"] == "unknown-selector"


def test_overlay_reads_a_string_ordinal_as_an_ordinal(v2, seedfix):
    """The seed's normalize_device maps ordinals to DEVICE.ROCM on HIP; "0" is the ordinal 0 and survives to the
    torch boundary as cuda:0. 7.7.0 refuses it ("'0' is not a valid DEVICE")."""
    steps = [{"action": "normalize", "device": s("0")}, {"action": "resolve", "device": s("0")},
             {"action": "resolve", "device": o(0)}]
    normalize, string, integer = seedfix.scenario(R9700X2, steps)["answers"]
    assert normalize["family"] == "rocm"
    assert resolved(string) == resolved(integer) == ("rocm", "cuda:0", 0)
    plain = v2.step(R9700X2, steps[1])
    assert plain["error"] == {"kind": "unknown-selector", "message": "'0' is not a valid DEVICE"}


def test_7_7_0_boundary_reads_the_selector_as_gptqmodel_does(v2):
    """7.7.0's boundary helper (normalize_device_like) receives the selector as GPTQModel's own reading of a public
    device value (importer._as_selector_device) makes it, never the raw spelling: "CPU" is cpu and "rocm" is
    DEVICE.ROCM (cuda:0 there: 7.7.0's family conversion), where torch.device("CPU") / ("rocm") would refuse."""
    cpu, rocm, move, bad = v2.scenario(R9700X2, [
        {"action": "resolve", "device": s("CPU")},
        {"action": "resolve", "device": s("rocm")},
        {"action": "move", "kernel": "gptq_torch", "device": s("rocm")},
        {"action": "resolve", "device": s("ROCM:0")},
    ])["answers"]
    assert resolved(cpu) == ("cpu", "cpu", None) and cpu["ok"] is True
    assert resolved(rocm) == ("rocm", "cuda:0", 0) and rocm["ok"] is True
    assert move["ok"] is True and move["lands_on"] == 0
    assert bad["error"] == {"kind": "unknown-selector", "message": "Invalid device `ROCM:0`"}  # GPTQModel's own
