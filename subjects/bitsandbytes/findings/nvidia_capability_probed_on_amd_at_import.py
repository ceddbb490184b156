"""bitsandbytes 0.50.2 asks every AMD GPU for an NVIDIA compute capability when it is imported on a HIP build.

Standalone reproduction (no devsim needed): python findings/nvidia_capability_probed_on_amd_at_import.py

It patches torch the way a HIP (ROCm) build with two Radeon AI PRO R9700 (gfx1201) reports itself, imports
bitsandbytes, and prints every `torch.cuda.get_device_capability` call bitsandbytes made. On such a build
`get_device_capability` answers the gfx numbers as (major, minor) = (12, 0); bitsandbytes' `cuda_specs`
(`get_compute_capabilities`, run from `cextension.get_native_library` at import) reads them as NVIDIA compute
capabilities, for every device. devsim rule: policy:no-cross-vendor-probe ("no NVIDIA compute-capability query
for an AMD request"); scenarios: probes/bitsandbytes_validate_on_hip_probes_no_nvidia_capability.toml and two
more (subjects/bitsandbytes/README.md). Prints one line per probe and exits 1 when the behaviour is present.
"""

from __future__ import annotations

import ctypes
import sys
import types

import torch


class Props(types.SimpleNamespace):
    pass


def main() -> int:
    probes: list[object] = []
    torch.version.hip, torch.version.cuda = "6.4.43482", None  # type: ignore[misc]
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 2
    torch.cuda.current_device = lambda: 0

    def capability(device: object = None) -> tuple[int, int]:
        probes.append(device)
        return (12, 0)

    torch.cuda.get_device_capability = capability
    props = Props(gcnArchName="gfx1201", name="AMD Radeon AI PRO R9700")
    torch.cuda.get_device_properties = lambda device=None: props  # type: ignore[assignment,return-value]
    # The ROCm runtime is not on this machine: answer bitsandbytes' library load with a stub, so import proceeds.
    real_load = ctypes.cdll.LoadLibrary

    def load(name: str) -> object:
        if "libbitsandbytes_rocm" in str(name):
            return types.SimpleNamespace(get_context=types.SimpleNamespace(), cget_managed_ptr=types.SimpleNamespace())
        return real_load(name)

    ctypes.cdll.LoadLibrary = load  # type: ignore[method-assign,assignment]
    import bitsandbytes

    for device in probes:
        index = getattr(device, "idx", device)  # bitsandbytes passes torch.cuda.device(i)
        print(f"bitsandbytes {bitsandbytes.__version__} asked AMD GPU {index} for an NVIDIA compute capability "
              "(torch.cuda.get_device_capability) on a HIP build")
    return 1 if probes else 0


if __name__ == "__main__":
    sys.exit(main())
