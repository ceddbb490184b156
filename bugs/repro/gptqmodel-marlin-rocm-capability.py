"""GPTQModel PR #1040: `utils/marlin.py::_validate_marlin_device_support` admits Marlin, an NVIDIA-only kernel,
wherever `torch.cuda.get_device_capability()[0] >= 8`. On a HIP build the capability is HIP's gfx version
(gfx942 -> (9, 4)), so an MI300X passes as if it were Ampere. `from_quantized(backend=MARLIN)` asks exactly
this function before loading. Correct: False on a HIP build.
"""


def observe() -> object:
    from gptqmodel.utils.marlin import _validate_marlin_device_support

    return _validate_marlin_device_support()
