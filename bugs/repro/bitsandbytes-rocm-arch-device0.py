"""bitsandbytes #1444 (control, open): `cuda_specs.get_rocm_gpu_arch` runs `rocminfo` and keeps the first
`Name: gfx...` line, so on a box of mixed AMD GPUs device 0 answers for all of them; `cextension.ROCM_GPU_ARCH`
is that one value. The repro makes cuda:1 (a gfx1201) current, as a user who works on it would, and asks
bitsandbytes for the arch. Correct: the arch of the GPU in use, gfx1201; the bug answers gfx942 (device 0).
"""


def observe() -> object:
    import torch
    from bitsandbytes.cuda_specs import get_rocm_gpu_arch

    torch.cuda.set_device(1)
    own = torch.cuda.get_device_properties(1).gcnArchName.split(":")[0]
    if own != "gfx1201":
        raise AssertionError(f"the host is not the mixed box this repro needs: cuda:1 is {own}")
    return get_rocm_gpu_arch()
