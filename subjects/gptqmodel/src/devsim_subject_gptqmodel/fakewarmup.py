"""A simulated warmup: GPTQModel's own placement, post-load init and forward, run under torch's FakeTensorMode.

A simulated host has no GPU, so a warmup cannot compute anything. What it can observe without one is where
GPTQModel's code puts the work: the kernel's module is built on the CPU with its own (zero) buffers, then moved
to the target, initialised by GPTQModel's `gptqmodel_post_init` and run once on a float16 input, all under
torch's `FakeTensorMode`. Fake tensors carry shapes, dtypes and devices but no data, and torch propagates their
devices exactly as it would real ones (an indexless "cuda" becomes the calling thread's current device, which
the simulated host answers). `ran_on` is the output's device; numerics are not observed.

Fake tensors cannot run code that reads a value on the way (`.item()`, `.numpy()`, a branch on a tensor: torch's
DataDependentOutputException). A forward that fails on such a limit of fake tensors (and only then: an error
of GPTQModel's own, such as a missing extension namespace, would not change with values) runs a second time on a
fresh module under the kit's
`CpuBackedGpus`: tensors still on the simulated GPUs as torch places them, their values in CPU memory and every op
torch's own CPU kernel. A value there is CPU arithmetic on zero buffers, never a GPU's result: `ran_on` stays a
placement observation, and the first attempt's trace events are dropped.

Only a forward that completes is an observation. Neither way runs what has no CPU or fake implementation
(GPTQModel's native extension ops, whose namespaces are absent without its CUDA build), so an exception on both
is `Unsimulable`: the step answers `unsupported` with both reasons, never a failure GPTQModel did not make on a
real GPU.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Self

import torch
from devsim_subject_kit.cpubacked import CpuBacked, CpuBackedGpus
from devsim_subject_kit.recorder import Recorder
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode

from .livewarmup import K, M, N, module_args


class _NoGpuFakeMode(FakeTensorMode):
    """FakeTensorMode as torch uses it on a machine without a GPU, whatever the simulated host answers.

    Torch decides from `torch.cuda.is_available()` whether a fake GPU tensor may touch the real device
    (constant propagation of one-element tensors, the CUDA device guard, and `init_gpu_context`, which
    allocates one real tensor per GPU the first time a fake one names it); the simulated host answers True,
    but this machine has no GPU, so the mode always avoids device initialisation."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # A fake tensor has no data: its data pointer (which torch only warns about) handed to native code through
        # ctypes (GGUFCppKernel's GGML bridge) would be read as memory and crash the process. Refused, it is a limit
        # of fake tensors, and the forward is retried with values.
        self._allow_unsafe_data_ptr_access = False

    @property
    def avoid_device_init(self) -> bool:
        return True

    def __enter__(self) -> Self:
        self._init_gpu_context = fake_tensor.init_gpu_context
        fake_tensor.init_gpu_context = _no_gpu_context  # type: ignore[assignment]
        return super().__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            super().__exit__(kind, error, trace)
        finally:
            fake_tensor.init_gpu_context = self._init_gpu_context


def _no_gpu_context(device: torch.device) -> None:
    """There is no real GPU context to initialise on a simulated host."""


class _CurrentGpuIndex(TorchFunctionMode):
    """An indexless "cuda" in a torch call names the calling thread's current GPU, as the simulated host says.

    Torch resolves an indexless GPU device in C++, through the CUDA device guard (`Tensor.to("cuda")`,
    `Tensor.cuda()`). Under a fake mode on a machine without a GPU that guard is a no-op that answers GPU 0, so
    without this every indexless move would seem to land on GPU 0 whatever the current device is. Here the index
    is filled in, in Python, from `torch.cuda.current_device()` (the simulated host's answer) before torch sees
    the call; a device that already has an index is left alone."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _indexed(kwargs["device"])
        if func is torch.Tensor.to:
            args = tuple(_indexed(a) for a in args)
        elif func is torch.Tensor.cuda:
            if len(args) > 1:
                args = (args[0], _indexed(args[1]), *args[2:])
            elif "device" not in kwargs:
                kwargs["device"] = _indexed(torch.device("cuda"))
        return func(*args, **kwargs)


def _indexed(value: Any) -> Any:
    if isinstance(value, str) and value == "cuda":
        value = torch.device(value)
    if isinstance(value, torch.device) and value.type == "cuda" and value.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return value


class Unsimulable(Exception):
    """The forward could not run on fake tensors (a limit of the simulation, never the kernel's verdict).
    `events`: the trace events GPTQModel's code recorded before it stopped there (a true prefix of its run)."""

    def __init__(self, message: str, events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.events = events or []


class Refusal(Exception):
    """The kernel's own code refused the device on its way to or in its forward (`error`): the project's
    decision, observed like a gate's refusal. Told from a limit of the simulation by the caller's `refuses`."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def prime() -> None:
    """Run one fake op in the parent, so forked children inherit torch's initialised fake-tensor machinery."""
    with _NoGpuFakeMode(allow_non_fake_inputs=True):
        (torch.zeros(2, 2, dtype=torch.float16) @ torch.zeros(2, 2, dtype=torch.float16)).sum()


def build(cls: Any, bits: int | str) -> Any:
    """The kernel's module on the CPU with the buffers its constructor gives it (the subject's own doing). A
    wrapper built from its checkpoint tensors (`from_tensors`: GPTQModel's EXL3 modules) gets a zero trellis of
    the problem's shape, which is all its placement reads before its first forward."""
    if callable(getattr(cls, "from_tensors", None)):
        try:
            tensors = {
                "trellis": torch.zeros(K // 16, N // 16, 16 * int(bits), dtype=torch.int16),
                "suh": torch.ones(K, dtype=torch.float16),  # the unpacked sign vectors
                "svh": torch.ones(N, dtype=torch.float16),
            }
            return cls.from_tensors(in_features=K, out_features=N, name="devsim", tensors=tensors).eval()
        except Exception as exc:
            raise Unsimulable(f"{cls.__name__} could not be built: {type(exc).__name__}: {exc}") from exc
    try:
        # register_buffers: the empty packed buffers GPTQModel's loader has its modules create (create_quant_layer);
        # the pack dtype the class declares when it does not take int32 (e.g. AwqGEMVFastLinear: int16)
        args = module_args(bits)
        packs = list(getattr(cls, "SUPPORTS_PACK_DTYPES", None) or [args["pack_dtype"]])
        if args["pack_dtype"] not in packs:
            args["pack_dtype"] = packs[0]
        return cls(**args, register_buffers=True).eval()
    except Exception as exc:
        raise Unsimulable(f"{cls.__name__} could not be built: {type(exc).__name__}: {exc}") from exc


def ran_on(
    build: Callable[[], Any],
    target: torch.device,
    recorder: Recorder,
    refuses: Callable[[BaseException], bool] = lambda _: False,
) -> Any:
    """Where the kernel's forward put its output for `target`: an ordinal, or the device type ("cpu").

    `build` makes the kernel's module on the CPU (`build` above, as the subject's own doing). The forward runs
    on fake tensors first; where that stops at a limit of fake tensors (a value read on the way: `.item()`,
    `.numpy()`, a branch on a tensor), it runs again on a fresh module with the values held on the CPU (the kit's
    `CpuBackedGpus`), the first attempt's trace events dropped. Otherwise, or when both fail, the warmup is
    `Unsimulable`. An error the kernel's own code raised to refuse the device (`refuses`) is its `Refusal`, with
    the trace up to it kept."""
    module = build()  # a module that cannot be built cannot be built twice either
    try:
        return _attempt(module, target, _NoGpuFakeMode(allow_non_fake_inputs=True), recorder, refuses)
    except Unsimulable as without_values:
        if not _fake_tensor_limit(without_values):
            # GPTQModel's own error (a missing extension namespace): values would not change it
            raise Unsimulable(
                f"{without_values}; not retried with values, which would not change it", without_values.events
            ) from None
        try:
            return _attempt(build(), target, CpuBackedGpus(), recorder, refuses)
        except Unsimulable as with_values:
            # both are prefixes of the same run of GPTQModel's code: the longer one says more
            events = max(without_values.events, with_values.events, key=len)
            raise Unsimulable(f"{without_values}; with its values on the CPU: {with_values}", events) from with_values


def _attempt(
    module: Any, target: torch.device, tensors: Any, recorder: Recorder, refuses: Callable[[BaseException], bool]
) -> Any:
    """One forward: its trace events kept when the kernel refused; when it stops at the simulation, taken out of
    the step's trace and kept on the `Unsimulable` as what happened before it stopped."""
    refusal: Refusal | None = None
    mark = len(recorder.events) if recorder.events is not None else 0
    with recorder.undone_on_error():
        try:
            return _forward_device(module, target, tensors)
        except Unsimulable as failed:
            if failed.__cause__ is None or not refuses(failed.__cause__):
                failed.events = list(recorder.events[mark:]) if recorder.events is not None else []
                raise
            refusal = Refusal(failed.__cause__)
    raise refusal


# What fake tensors cannot do and CPU-backed ones can: read a value, or take a shape from one. `.numpy()` and
# `.tolist()` of any tensor subclass fail in torch's C++ with this wording and no type of their own.
_FAKE_LIMITS = (
    fake_tensor.DataDependentOutputException,
    fake_tensor.DynamicOutputShapeException,
    fake_tensor.UnsupportedOperatorException,
)
_SUBCLASS_LIMIT = "is not supported for tensor subclasses"
# torch's wording when a fake tensor's data pointer is asked for (refused by `_NoGpuFakeMode`)
_DATA_POINTER_LIMIT = "Cannot access data pointer of Tensor (e.g. FakeTensor"


def _fake_tensor_limit(error: BaseException) -> bool:
    """Whether the fake attempt failed on a limit of fake tensors (anywhere in its exception chain)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, _FAKE_LIMITS) or _SUBCLASS_LIMIT in str(cause) or _DATA_POINTER_LIMIT in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _forward_device(module: Any, target: torch.device, tensors: Any) -> Any:
    from gptqmodel.utils.model import gptqmodel_post_init

    try:
        # no_grad, not inference_mode: in inference mode `Tensor.to` reaches the mode as aten.to.dtype_layout, which
        # the fake mode's device-init avoidance does not cover (it would allocate a real GPU tensor)
        # force_eager: a torch.compile'd function (e.g. TorchQuantLinear.dequantize_weight) runs as written, since
        # dynamo would save and restore the real GPU's RNG state; placement is the same either way
        with (
            tensors,
            _CurrentGpuIndex(),
            torch.no_grad(),
            torch.compiler.set_stance("force_eager"),
            _triton_launches_on_simulated_tensors(),
        ):
            model = torch.nn.Sequential(module).to(target)
            gptqmodel_post_init(model, use_act_order=False)
            output = model(torch.zeros(M, K, dtype=torch.float16).to(target))
    except Exception as exc:
        runs_on = "fake tensors" if isinstance(tensors, FakeTensorMode) else "CPU-backed tensors"
        raise Unsimulable(
            f"{type(module).__name__}'s forward calls what {runs_on} cannot run: "
            f"{type(exc).__name__}: {_first_line(exc)}"
        ) from exc
    if isinstance(tensors, CpuBackedGpus) and target.type == "cuda" and not isinstance(output, CpuBacked):
        # torch's C++ sees a CPU tensor in a CPU-backed one: a composite op allocating "like its input" allocates
        # on the CPU, where a GPU host would allocate on the GPU, so a CPU output here proves nothing
        raise Unsimulable(
            f"{type(module).__name__}'s forward on CPU-backed tensors returned a plain CPU tensor, which they cannot "
            "tell from torch allocating like a CPU input"
        )
    device = output.device
    return device.index if device.type == "cuda" else device.type


@contextlib.contextmanager
def _triton_launches_on_simulated_tensors() -> Iterator[None]:
    """`kernel[grid](...)` of a Triton kernel does nothing when its tensors are fake or CPU-backed.

    A Triton kernel writes into buffers its caller allocated, so skipping the launch leaves every device the
    caller chose as it was (and, CPU-backed, the values it would have written unwritten: placement only). The
    launch is checked as Triton would run it: on the calling thread's current GPU, with every tensor argument a
    simulated tensor on that GPU; anything else is not simulated (`Unsimulable`)."""
    if importlib.util.find_spec("triton") is None:
        yield
        return
    from triton.runtime.jit import KernelInterface  # type: ignore[import-untyped]

    original = KernelInterface.__getitem__

    def launcher(kernel: Any, grid: Any) -> Callable[..., None]:
        def launch(*args: Any, **kwargs: Any) -> None:
            devices = {a.device for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)}
            if not all(isinstance(a, (fake_tensor.FakeTensor, CpuBacked)) for a in (*args, *kwargs.values())
                       if isinstance(a, torch.Tensor)):
                raise Unsimulable(f"Triton kernel {_kernel_name(kernel)} was given real tensors")
            current = torch.device("cuda", torch.cuda.current_device())
            if devices - {current}:
                raise Unsimulable(
                    f"Triton kernel {_kernel_name(kernel)} would launch on the current GPU {current.index} with "
                    f"tensors on {', '.join(sorted(str(d) for d in devices - {current}))}"
                )

        return launch

    KernelInterface.__getitem__ = launcher  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        KernelInterface.__getitem__ = original  # type: ignore[method-assign]


def _kernel_name(kernel: Any) -> str:
    return str(getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "?"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "no message"

