"""GPTQModel's native ops that only write into their callers' buffers are checked, not run, on a simulated host
(nativeops): their schemas come from GPTQModel's own C++ sources, an op that returns a tensor is never defined,
and what a scenario defined is gone before the next one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SRC
from fakedevsim import H200X2, R9700X2, s

torch = pytest.importorskip("torch")

from devsim_subject_gptqmodel import fakewarmup, nativeops

EXT = Path(SRC or "") / "gptqmodel_ext"


@pytest.fixture(scope="module")
def catalog():
    return nativeops.scan(EXT)


@pytest.fixture
def qqq(catalog):
    registered = nativeops.register("gptqmodel_qqq", ("qqq_gemm",), catalog)
    assert registered is not None
    yield registered
    registered.remove()


def test_schemas_are_read_from_gptqmodels_own_sources(catalog):
    qqq = catalog["gptqmodel_qqq"]
    assert qqq.schemas["qqq_gemm"].startswith("qqq_gemm(Tensor A, Tensor B, Tensor(a!) C, Tensor(a!) D,")
    assert nativeops.returns_nothing(qqq.schemas["qqq_gemm"])
    assert "CUDA" in qqq.dispatch_keys
    assert not nativeops.returns_nothing(catalog["gptqmodel_awq"].schemas["gemm_forward"])


def test_reading_the_sources_writes_nothing_and_follows_no_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "ops.cpp").write_text('TORCH_LIBRARY(ns_a, m) {\n  m.def("f(Tensor(a!) x) -> ()");\n}\n'
                                                "TORCH_LIBRARY_IMPL(ns_a, CUDA, m) {}\n")
    (tmp_path / "linked.cpp").symlink_to(tmp_path / "real" / "ops.cpp")
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    found = nativeops.scan(tmp_path)
    assert found == {"ns_a": nativeops.Declared(schemas={"f": "f(Tensor(a!) x) -> ()"},
                                                dispatch_keys=frozenset({"CUDA"}))}
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert nativeops.scan(tmp_path / "absent") == {}


def test_an_extension_with_an_op_that_returns_a_tensor_is_left_undefined(catalog):
    assert nativeops.register("gptqmodel_awq", ("gemm_forward",), catalog) is None
    assert not hasattr(torch.ops.gptqmodel_awq, "gemm_forward")




def fake_args(device_of_d: str) -> list:
    """qqq_gemm's tensor arguments (shapes do not matter to the check), D on `device_of_d`, the rest on cuda:1."""
    return [torch.zeros(2).to("cuda:1") if i != 3 else torch.zeros(2).to(device_of_d) for i in range(8)]


@pytest.fixture
def simulated():
    from devsim_subject_kit import Host
    from devsim_subject_kit.simtorch import SimulatedTorch

    runtime = SimulatedTorch().install(Host.from_message(H200X2))
    yield runtime
    runtime.uninstall()


def test_a_call_on_one_gpu_runs_nothing_and_a_call_across_gpus_is_not_simulated(qqq, simulated):
    with fakewarmup._NoGpuFakeMode(allow_non_fake_inputs=True):
        assert torch.ops.gptqmodel_qqq.qqq_gemm(*fake_args("cuda:1")) is None
        with pytest.raises(nativeops.NotSimulated, match="cuda:0, cuda:1"):
            torch.ops.gptqmodel_qqq.qqq_gemm(*fake_args("cuda:0"))


def test_removing_takes_the_definition_and_torchs_handle_back(qqq, catalog):
    assert hasattr(torch.ops.gptqmodel_qqq, "qqq_gemm")
    qqq.remove()
    assert not hasattr(torch.ops.gptqmodel_qqq, "qqq_gemm")
    again = nativeops.register("gptqmodel_qqq", ("qqq_gemm",), catalog)  # free again, as in a fresh fork
    assert again is not None
    again.remove()


@pytest.mark.parametrize("host, device, ran_on", [(H200X2, "cuda:1", 1), (R9700X2, "cuda:0", 0)])
def test_a_qqq_warmup_is_observed_where_its_forward_places_the_output(driver, host, device, ran_on):
    """QQQ's forward allocates its output and lets qqq_gemm write it: before the checked op, every QQQ warmup was
    unsupported (GPTQModel: `gptqmodel_qqq` is unavailable)."""
    answer = driver.step(host, {"action": "warmup", "kernel": "qqq", "device": s(device)})
    assert answer["type"] == "observed", answer
    assert answer["ok"] is True and answer["ran_on"] == ran_on


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_warmups_through_native_extensions_write_nothing_into_gptqmodels_tree(driver):
    """An extension's own `sources()` may generate kernels into GPTQModel's tree (Marlin's generate_kernels.py):
    the simulated extension load never calls it, so a Marlin, a QQQ and an AWQ warmup leave the tree as it was."""
    before = tree(EXT)
    for kernel in ("gptq_marlin", "qqq", "awq_gemm"):
        driver.step(H200X2, {"action": "warmup", "kernel": kernel, "device": s("cuda:0")})
    assert tree(EXT) == before


def test_priming_lets_inspect_find_this_module_by_its_file_without_a_walk():
    # register_fake asks inspect for its caller's frame; after prime() in the parent, inspect's module-by-file
    # cache already names nativeops.py, so a child's lookup is a dict hit instead of a walk over sys.modules
    import inspect

    nativeops.prime()
    assert inspect.modulesbyfile.get(inspect.getabsfile(nativeops.register)) == nativeops.__name__
