"""Tensors on a simulated host's GPUs, their data held in CPU memory: `CpuBackedGpus`.

A simulated host has GPUs that do not exist. Torch's fake tensors place work on them exactly, but carry no data,
so code that branches on a value (`.item()`, `torch.equal`, a `.tolist()` of indices) cannot run on them. Under
`CpuBackedGpus` a tensor torch puts on a GPU is a `CpuBacked` tensor: torch sees its device (`cuda:1`), its shape,
dtype and strides; its values live in a CPU tensor, and every op runs torch's own CPU kernel on them.

Devices follow torch's rules for a GPU host, not the CPU's:
- a factory op or a copy with `device=` puts its result there (an indexless "cuda" must have been given its
  index before torch sees it: the simulated host's current GPU);
- any other op puts its result on the device its tensors share, where a CPU tensor with no dimensions may join
  GPU tensors (as torch allows); tensors on two devices are torch's own error, "Expected all tensors to be on the
  same device", as on a real GPU host;
- `copy_` keeps its destination's device (a copy across devices is allowed);
- an in-place op returns the tensor it changed;
- `.numpy()`, `.tolist()` and `.item()` of a tensor read through torch's dispatch: `.item()` and `.tolist()` read
  the CPU values (torch copies them to the host on a real GPU), `.numpy()` of a GPU tensor is refused as torch
  refuses it.

What has no CPU kernel (a project's CUDA-only native op) fails as it is, with torch's error: a caller treats it
as what the simulation cannot run. Values are what CPU arithmetic computes, which is not what a GPU kernel
computes bit for bit: a placement observation, never a numerics one.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .patches import Patches

_aten = torch.ops.aten

# ops whose result stays on their first argument's device whatever the others' are (a copy between devices)
_DESTINATION_DEVICE = {_aten.copy_.default, _aten._copy_from.default, _aten._copy_from_and_resize.default}
_CPU = torch.device("cpu")
# ops whose index tensors may stay on the CPU while the indexed tensor is on a GPU (torch moves them)
_INDEXING = {
    _aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default, _aten._index_put_impl_.default,
    _aten._unsafe_index.Tensor,
}


class CpuBacked(torch.Tensor):
    """A tensor on a simulated GPU whose values are the CPU tensor `data_on_cpu`.

    To torch's C++ side it is a CPU tensor, so the CUDA device guards that some bindings take (`copy_`,
    `contiguous`) never reach a GPU that does not exist, and an index list becomes a CPU index tensor, as torch
    allows with a GPU tensor. Python code sees the simulated device (`device`, `is_cuda`, `is_cpu`,
    `get_device`), and `to`, `cpu` and `cuda` move it as they would move a tensor on that device."""

    data_on_cpu: torch.Tensor
    simulated_device: torch.device

    @staticmethod
    def __new__(cls, data: torch.Tensor, device: torch.device) -> Self:
        made = torch.Tensor._make_wrapper_subclass(
            cls,
            data.size(),
            strides=data.stride(),
            storage_offset=data.storage_offset(),
            dtype=data.dtype,
            layout=data.layout,
            device=_CPU,
            requires_grad=data.requires_grad,
        )
        made.data_on_cpu = data
        made.simulated_device = device
        return made

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self.simulated_device

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return self.simulated_device.type == "cuda"

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    @property
    def data(self) -> Any:
        return torch.ops.aten.detach.default(self)

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        # as torch does, the tensor now is where the new data is (a plain tensor's device: the CPU)
        new = new if isinstance(new, CpuBacked) else CpuBacked(new, new.device)
        torch._C.TensorBase.data.__set__(self, new)  # type: ignore[attr-defined]
        self.data_on_cpu, self.simulated_device = new.data_on_cpu, new.simulated_device

    def data_ptr(self) -> int:
        """The address of the values, in CPU memory. A wrapper tensor has no storage of its own, so torch would
        answer 0, and native code handed that (a GGML bridge through ctypes, a cache keyed by weight address)
        would read address 0 or take two tensors for one; on a GPU host every tensor's address is its own."""
        return int(self.data_on_cpu.data_ptr())

    def get_device(self) -> int:
        return -1 if self.simulated_device.index is None else self.simulated_device.index

    def to(self, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], torch.Tensor):
            device, dtype = args[0].device, args[0].dtype
            copy = bool(kwargs.get("copy", args[2] if len(args) > 2 else False))
        else:
            device, dtype, _, _ = torch._C._nn._parse_to(*args, **{k: v for k, v in kwargs.items() if k != "copy"})
            copy = bool(kwargs.get("copy", False))
        if device is not None and device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        same_device = device is None or device == self.simulated_device
        if same_device and (dtype is None or dtype == self.dtype) and not copy:
            return self
        with _asked_by_caller():
            return torch.ops.aten._to_copy.default(
                self, dtype=dtype or self.dtype, device=self.simulated_device if same_device else device
            )

    def cpu(self, *args: Any, **kwargs: Any) -> Any:
        return self.to(_CPU)

    def cuda(self, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        if device is None:
            return self.to(torch.device("cuda"))
        return self.to(torch.device("cuda", device) if isinstance(device, int) else torch.device(device))

    def __repr__(self) -> str:  # type: ignore[override]
        return f"CpuBacked({self.data_on_cpu!r}, device='{self.device}')"

    def numpy(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
            "host memory first."
        )

    def tolist(self) -> Any:
        return self.data_on_cpu.tolist()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        # torch copies a tensor's storage, which a wrapper has not: copy the values, keep the device
        copied = memo.get(id(self))
        if copied is None:
            copied = memo[id(self)] = CpuBacked(copy.deepcopy(self.data_on_cpu, memo), self.simulated_device)
        return copied

    def __reduce_ex__(self, protocol: Any) -> Any:
        # a wrapper has no storage for torch.save to write: its values are saved, and loaded back onto its GPU
        # as torch loads a GPU tensor back onto the GPU it was saved from
        return rebuild_cpu_backed, (self.data_on_cpu.detach(), str(self.simulated_device), self.requires_grad)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:  # type: ignore[override]
        # reached only outside the mode (a CpuBacked tensor kept after it ended): run it as the mode would
        with CpuBackedGpus():  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
            return func(*args, **(kwargs or {}))


def rebuild_cpu_backed(data: torch.Tensor, device: str, requires_grad: bool) -> CpuBacked:
    """A `CpuBacked` tensor loaded by `torch.load` (see `CpuBacked.__reduce_ex__`)."""
    loaded = CpuBacked(data, torch.device(device))
    loaded.requires_grad_(requires_grad)
    return loaded


# `torch.load(weights_only=True)`, torch's default, loads only the functions it was told are safe
torch.serialization.add_safe_globals([rebuild_cpu_backed])


class CpuBackedGpus(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    """While active, every tensor torch places on a GPU is `CpuBacked`; CPU tensors stay plain tensors.

    `Module.to` swaps a parameter's data in place when torch calls the two tensors shallow-copy compatible, which
    to C++ a CPU tensor and a `CpuBacked` one are; while the mode is active a CPU tensor and `CpuBacked` data are
    not, so a parameter moved onto a GPU is a new `CpuBacked` parameter (one moved back takes its CPU values in
    place). A project's tensor subclass made from a `CpuBacked` tensor (`Tensor._make_subclass`, bitsandbytes'
    `Int8Params`) or given `CpuBacked` data (`tensor.data = ...`) becomes the `CpuBacked` kind of its class
    (`cpu_backed_class`), keeping its own methods. `torch.save` writes a `CpuBacked` tensor's values and
    `torch.load` puts them back on its GPU (`map_location` is not applied to it); `copy.deepcopy` keeps its GPU.
    A C++ conversion to recorded options (autograd's backward of a cast) keeps a `CpuBacked` tensor on its GPU;
    only `to`/`cpu` move it to the CPU. The mode is per thread (torch keeps its modes per thread): a thread
    enters its own (`threads.AllThreads` makes every thread a session starts do so); the attributes it patches
    are shared, put in place by the first mode entered in any thread and back by the last one left."""

    def __enter__(self) -> Self:
        _TORCH_PATCHES.acquire()
        try:
            return super().__enter__()  # type: ignore[no-any-return,no-untyped-call]
        except BaseException:
            _TORCH_PATCHES.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        finally:
            _TORCH_PATCHES.release()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        device = _result_device(func, tensors, kwargs.get("device"))
        if kwargs.get("device") is not None:
            kwargs["device"] = _CPU
        result = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
        if device.type == "cpu":
            return result
        # an op that returns one of its arguments (in place, out=) returns the tensor it was given
        given = {id(t.data_on_cpu): t for t in tensors if isinstance(t, CpuBacked)}

        def wrap(value: Any) -> Any:
            if not isinstance(value, torch.Tensor) or isinstance(value, CpuBacked):
                return value
            kept = given.get(id(value))
            return kept if kept is not None else CpuBacked(value, device)

        return tree_map(wrap, result)


class _SharedPatches:
    """torch's attributes the mode replaces while it is active in any thread (`set`: who uses them counts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._patches = Patches()

    def acquire(self) -> None:
        with self._lock:
            if self._users == 0:
                patches = self._patches
                patches.set(torch, "_has_compatible_shallow_copy_type",
                            _compatible_unless_cpu_backed(torch._has_compatible_shallow_copy_type))
                patches.set(torch.Tensor, "_make_subclass",
                            staticmethod(_make_subclass_of(torch._C.TensorBase._make_subclass)))
                patches.set(torch.Tensor, "data", _DATA)
                for name in ("tensor", "as_tensor"):
                    patches.set(torch, name, _from_data_on_cpu(getattr(torch, name)))
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._patches.undo()


class _Caller(threading.local):
    """Whether the `_to_copy` being dispatched on this thread is a move the caller asked for (`CpuBacked.to`)."""

    asked = False


_CALLER = _Caller()


@contextmanager
def _asked_by_caller() -> Iterator[None]:
    before, _CALLER.asked = _CALLER.asked, True
    try:
        yield
    finally:
        _CALLER.asked = before


def _from_data_on_cpu(make: Any) -> Any:
    """`torch.tensor` or `torch.as_tensor` that, asked for a GPU, makes the tensor on the CPU and moves it there:
    torch's own would enter the GPU's device guard, which asks the real driver."""

    def made(data: Any, *args: Any, device: Any = None, **kwargs: Any) -> Any:
        if device is None or torch.device(device).type != "cuda":
            return make(data, *args, device=device, **kwargs)
        requires_grad = bool(kwargs.pop("requires_grad", False))
        return make(data, *args, **kwargs).to(device).requires_grad_(requires_grad)

    made.__wrapped__ = make  # type: ignore[attr-defined]  # torch._dynamo reads it from patched functions
    return made


def _make_subclass_of(make_subclass: Any) -> Any:
    """`Tensor._make_subclass` that, given a `CpuBacked` tensor, makes the subclass (a project's `Parameter`
    subclass: bitsandbytes' `Int8Params`) a `CpuBacked` one sharing its values, as torch makes it share a GPU
    tensor's storage; any other tensor is torch's own."""

    # any arguments: torch._dynamo checks a replacement's signature against its polyfill's at its import
    def make(*args: Any, **kwargs: Any) -> Any:
        cls = args[0] if args else kwargs.get("cls")
        data = args[1] if len(args) > 1 else kwargs.get("data")
        if isinstance(data, CpuBacked) and isinstance(cls, type):
            requires_grad = bool(args[2] if len(args) > 2 else kwargs.get("requires_grad", False))
            kind = cls if issubclass(cls, CpuBacked) else cpu_backed_class(cls)
            made: Any = CpuBacked.__new__(kind, data.data_on_cpu.detach(), data.simulated_device)
            return made.requires_grad_(requires_grad)
        return make_subclass(*args, **kwargs)

    return make


_BASE_DATA: Any = torch._C.TensorBase.data


def _set_data(tensor: torch.Tensor, new: torch.Tensor) -> None:
    """`tensor.data = new` for a tensor not on a simulated GPU: given a `CpuBacked` tensor, it becomes one (its
    class the `CpuBacked` kind of its own), as a CPU tensor given GPU data is on the GPU from then on."""
    _BASE_DATA.__set__(tensor, new)
    if isinstance(new, CpuBacked) and not isinstance(tensor, CpuBacked):
        tensor.__class__ = cpu_backed_class(type(tensor))
        cpu_backed: Any = tensor
        cpu_backed.data_on_cpu, cpu_backed.simulated_device = new.data_on_cpu, new.simulated_device


#: `Tensor.data` while the mode is active
_DATA = property(_BASE_DATA.__get__, _set_data)
_TORCH_PATCHES = _SharedPatches()

_CPU_BACKED_CLASSES: dict[type, type] = {}


def cpu_backed_class(cls: type) -> type:
    """The `CpuBacked` kind of tensor class `cls`: a subclass of both, named as `cls` (its methods first, so a
    project's `Parameter` subclass keeps its own `to`, `__deepcopy__` and pickling)."""
    made = _CPU_BACKED_CLASSES.get(cls)
    if made is None:
        made = type(cls.__name__, (cls, CpuBacked), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _CPU_BACKED_CLASSES[cls] = made
    return made


def _compatible_unless_cpu_backed(compatible: Any) -> Any:
    # torch's own parameter names: torch._dynamo checks them against its polyfill of this function
    def check(input: torch.Tensor, from_: torch.Tensor) -> bool:
        if isinstance(from_, CpuBacked) and not isinstance(input, CpuBacked):
            return False
        return bool(compatible(input, from_))

    return check


def _unwrap(value: Any) -> Any:
    return value.data_on_cpu if isinstance(value, CpuBacked) else value


def _result_device(func: Any, tensors: list[torch.Tensor], requested: Any) -> torch.device:
    """Where torch puts the result of `func` on `tensors` (its tensor arguments, in order) on a GPU host, given
    its `device=` argument (see the module doc)."""
    if requested is not None:
        asked = torch.device(requested)
        if asked.type == "cpu" and func is _aten._to_copy.default and not _CALLER.asked and tensors \
                and isinstance(tensors[0], CpuBacked):
            # torch's C++ side converting a tensor to the options it recorded (autograd's backward of a dtype
            # cast): to C++ a CpuBacked tensor is on the CPU, but on a GPU host these options name its GPU
            return tensors[0].device
        if asked.type == "cuda" and asked.index is None:
            return torch.device("cuda", torch.cuda.current_device())
        return asked
    if not tensors:
        return _CPU
    if func in _DESTINATION_DEVICE:
        return tensors[0].device
    if func in _INDEXING and tensors[0].device.type != "cpu":
        tensors = [tensors[0], *(t for t in tensors[1:] if t.device.type != "cpu")]
    devices = {t.device for t in tensors if not (t.device.type == "cpu" and t.dim() == 0)}
    gpus = {d for d in devices if d.type != "cpu"}
    if not gpus:
        return _CPU
    if len(devices) > 1:
        first, second = sorted(devices, key=str)[:2]
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!"
        )
    return gpus.pop()
