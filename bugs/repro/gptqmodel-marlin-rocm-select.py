"""GPTQModel PR #1040, second half: `select_quant_linear(backend=BACKEND.MARLIN)` returned MarlinQuantLinear
without validating it, so an explicit Marlin request on a HIP build got the NVIDIA-only kernel class. Correct:
the class is validated and refused (ValueError) on ROCm.
"""


def observe() -> object:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.utils import BACKEND
    from gptqmodel.utils.importer import select_quant_linear

    chosen = select_quant_linear(bits=4, group_size=128, desc_act=False, sym=True, device=DEVICE.CUDA,
                                 backend=BACKEND.MARLIN)
    return chosen.__name__
