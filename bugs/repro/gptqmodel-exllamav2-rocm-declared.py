"""GPTQModel PR #1449: `ExllamaV2QuantLinear.SUPPORTS_DEVICES` listed `DEVICE.ROCM`, a path whose accuracy is
broken on AMD ("ROCm has broken accuracies issues", the fix's comment), so the device gate admitted the kernel
for an AMD request. The request is made the project's own way: `device="cuda:0"` on a HIP build, which
`normalize_device_device_map` maps to `DEVICE.ROCM`. Correct: the gate refuses ROCm (NotImplementedError).
"""


def observe() -> object:
    from gptqmodel.nn_modules.qlinear.exllamav2 import ExllamaV2QuantLinear
    from gptqmodel.utils.importer import normalize_device_device_map

    device = normalize_device_device_map("cuda:0", None)
    ExllamaV2QuantLinear.validate_device(device)
    return f"accepted {device.value}"
