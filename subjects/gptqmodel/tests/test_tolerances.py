"""A live forward is judged by the tolerance GPTQModel's own kernel tests state, read from the test file.

The test file here is a stand-in written for these tests in the shape of GPTQModel's
`tests/kernels/test_gptq.py` (a `BACKEND.X: Class` map, `float16_cases` rows, `torch.isclose(..., rtol=...)` in
`_summarize_results`, the reference backend's forward feeding `reference_outputs`): each test removes or
changes one piece and says what the subject then declares.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from devsim_subject_gptqmodel import livewarmup, tolerances
from fakedevsim import CPU, Driver, s

STAND_IN = '''
class TestKernelOutput(unittest.TestCase):
    backend_classes = {
        BACKEND.TORCH: TorchLinear,
        BACKEND.TORCH_FUSED: TorchFusedLinear,
        BACKEND.EXLLAMA_V2: ExllamaV2Linear,
    }

    @classmethod
    def setUpClass(cls):
        data.torch_kernel = cls.forward(cls, backend=BACKEND.TORCH, dtype=dtype)

    def _summarize_results(self, reference_outputs, actual_outputs, atol):
        is_close_tensor = torch.isclose(reference_fp32, actual_fp32, rtol=0.15, atol=atol)

    float16_cases = [
        (BACKEND.TORCH, torch.float16, 0.0000),
        (BACKEND.TORCH_FUSED, torch.float16, ATOL_FUSED),
        (BACKEND.EXLLAMA_V2, torch.float16, 0.0068),
    ]
    bfloat16_cases = [
        (BACKEND.EXLLAMA_V2, torch.bfloat16, 0.0080),
    ]

    def test_kernel_float16(self, backend, dtype, a_tolerance):
        self._summarize_results(reference_outputs=data.torch_kernel.outputs, actual_outputs=out.outputs, atol=a_tolerance)
'''



def write_tests(root: Path, text: str) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "test_gptq.py").write_text(text)
    return root


def test_the_tolerance_table_is_read_with_its_rtol_reference_and_line(tmp_path):
    stated, note = tolerances.read(write_tests(tmp_path, STAND_IN.replace("ATOL_FUSED", "0.0010")))
    assert "tolerances read from" in note
    rows = {(row.cls_name, row.dtype): row for row in stated}
    exllama = rows[("ExllamaV2Linear", "float16")]
    assert (exllama.rtol, exllama.atol, exllama.reference_cls) == (0.15, 0.0068, "TorchLinear")
    line = 1 + STAND_IN.splitlines().index("        (BACKEND.EXLLAMA_V2, torch.float16, 0.0068),")
    assert exllama.source.startswith(f"tests/kernels/test_gptq.py::TestKernelOutput.float16_cases (line {line};")
    assert rows[("ExllamaV2Linear", "bfloat16")].atol == 0.0080


@pytest.mark.parametrize(
    ("change", "note"),
    [
        # no rtol where the comparison is made: no tolerance can be read, the seed's applies
        (("rtol=0.15, ", ""), "states no per-backend tolerance table"),
        # the reference backend is not in the class map
        (("BACKEND.TORCH: TorchLinear,", ""), "states no per-backend tolerance table"),
        # what feeds reference_outputs cannot be found
        (("reference_outputs=", "expected="), "states no per-backend tolerance table"),
        (("class TestKernelOutput", "class TestKernelOutput("), "were not read"),  # a syntax error
    ],
)
def test_a_table_missing_a_piece_states_nothing_and_says_so(tmp_path, change, note):
    text = STAND_IN.replace("ATOL_FUSED", "0.0010").replace(*change)
    stated, said = tolerances.read(write_tests(tmp_path, text))
    assert stated == [] and note in said and "the seed's tolerance applies" in said


def test_no_tests_folder_states_nothing(tmp_path):
    stated, note = tolerances.read(tmp_path / "absent")
    assert stated == [] and "were not read" in note


def driver_with_tests(env: dict[str, str], tests: Path) -> Driver:
    driver = Driver({**env, "DEVSIM_GPTQMODEL_TESTS": str(tests)})
    driver.hello(protocol=2, live=True)
    return driver


@pytest.mark.parametrize(("atol", "within"), [("0.0068", True), ("0.0", False)])
def test_a_live_forward_is_judged_against_the_projects_reference_at_its_tolerance(tmp_path, env, atol, within):
    # TorchFusedLinear runs on this machine's CPU; its stated tolerance is against TorchLinear's forward.
    # With an atol of 0 and an rtol of 0 the two kernels' float16 outputs must agree exactly, which they do not:
    # the same check can fail.
    text = STAND_IN.replace("ATOL_FUSED", atol)
    if atol == "0.0":
        text = text.replace("rtol=0.15", "rtol=0.0")
    driver = driver_with_tests(env, write_tests(tmp_path, text))
    try:
        declared = {k["name"]: k for k in driver.handshake["kernels"]}
        assert "tolerances" not in declared["gptq_torch"], "a reference is not compared with itself"
        (fused,) = declared["gptq_torch_fused"]["tolerances"]
        assert fused["reference"] == "gptq_torch" and fused["atol"] == float(atol)
        answer = driver.step(CPU, {"action": "warmup", "kernel": "gptq_torch_fused", "device": s("cpu")})
        if answer["type"] == "unsupported":
            pytest.skip(f"TorchFusedLinear cannot run on this CPU: {answer['reason']}")
        numerics = answer["numerics"]
        assert numerics["reference"] == "gptq_torch" and numerics["tolerance_source"] == fused["source"]
        assert numerics["reference_max_abs_error"] is not None and numerics["max_abs_error"] > 0
        assert numerics["within"] is within, numerics
    finally:
        assert driver.close() == 0, driver.stderr_text()[-4000:]


def test_without_a_stated_tolerance_nothing_judges_and_the_reference_is_still_compared(tmp_path, env):
    driver = driver_with_tests(env, tmp_path / "no-tests-here")
    try:
        assert all("tolerances" not in k for k in driver.handshake["kernels"])
        answer = driver.step(CPU, {"action": "warmup", "kernel": "gptq_torch_fused", "device": s("cpu")})
        if answer["type"] == "unsupported":
            pytest.skip(f"TorchFusedLinear cannot run on this CPU: {answer['reason']}")
        numerics = answer["numerics"]
        assert numerics["not_judged"] == "the project states no tolerance" and "tolerance_source" not in numerics
        assert numerics["rtol"] == numerics["atol"] == 2e-3, "the seed's check, for information"
        assert numerics["max_abs_error"] > 0 and numerics["oracle"] == livewarmup.WEIGHT_ONLY
        assert numerics["reference"] == "gptq_torch" and numerics["reference_max_abs_error"] is not None
    finally:
        assert driver.close() == 0, driver.stderr_text()[-4000:]


def test_without_a_stated_tolerance_the_forward_is_not_judged_and_its_error_is_reported() -> None:
    # The seed's 2e-3 would fail this forward; the project states no tolerance, so nothing judges it.
    forward = livewarmup.Forward("cpu", 6.65e-2, False)
    answer = livewarmup.numerics(forward)
    assert not forward.judged
    assert answer["not_judged"] == "the project states no tolerance"
    assert answer["max_abs_error"] == 6.65e-2 and answer["oracle"] == livewarmup.WEIGHT_ONLY
    stated = livewarmup.Tolerance(0.15, 0.0068, "gptq_torch", "tests/kernels/test_gptq.py::T.float16_cases")
    judged = livewarmup.numerics(livewarmup.Forward("cpu", 1e-3, True, stated, "gptq_torch", 5e-4))
    assert "not_judged" not in judged and judged["tolerance_source"] == stated.source


def test_the_fp8_activation_oracle_rounds_each_row_as_the_kernel_does() -> None:
    # Row 0: amax 448, scale 1: 0.3 lies between the e4m3 values 0.28125 and 0.3125 and rounds to the nearer;
    # 1.0 and 448 are e4m3 values and stay. Row 1: amax 1.75, scale 1.75 / 448 = 2^-8; 0.5 / scale = 128 is an
    # e4m3 value, so the row is kept exactly. Row 2: zero, scale 1.
    x = torch.tensor([[448.0, 1.0, 0.3], [1.75, 0.5, -1.75], [0.0, 0.0, 0.0]], dtype=torch.float16)
    rounded = livewarmup.fp8_e4m3_rows(x)
    assert rounded[0].tolist() == [448.0, 1.0, 0.3125]
    assert rounded[1].tolist() == x[1].to(torch.float64).tolist()
    assert rounded[2].tolist() == [0.0, 0.0, 0.0]


def test_the_fp8_activation_oracle_differs_from_the_weight_only_one_by_the_activations_rounding() -> None:
    weights = livewarmup.Weights.draw(4)
    generator = torch.Generator().manual_seed(livewarmup.SEED_INPUT)
    x = torch.rand(livewarmup.M, livewarmup.K, generator=generator).mul_(2).sub_(1).to(torch.float16)
    weight_only, plain = livewarmup.oracle(x, weights)
    fp8, modelled = livewarmup.oracle(x, weights, "fp8_e4m3_row")
    assert plain == livewarmup.WEIGHT_ONLY and "float8 e4m3" in modelled and "per row" in modelled
    # The two differ by exactly the rounding's error times the exact weight.
    rounding = x.to(torch.float64) - livewarmup.fp8_e4m3_rows(x)
    assert torch.allclose(weight_only - fp8, rounding @ weights.float_weight(torch.float64), rtol=0, atol=1e-12)
    # By far more than the seed's 2e-3: a kernel that rounds its activations fails a weight-only oracle.
    assert (weight_only - fp8).abs().max().item() > 10 * livewarmup.ATOL
    with pytest.raises(livewarmup.Unbuildable, match="models no activation rounding `int8_row`"):
        livewarmup.oracle(x, weights, "int8_row")
