"""GPTQModel PR #1096: `MarlinQuantLinear.validate_device` reads `CUDA_VISIBLE_DEVICES` and queries
`torch.cuda.get_device_capability(int(i))` for each *value* of the mask. With `CUDA_VISIBLE_DEVICES=1` torch
sees one GPU, ordinal 0; ordinal 1 does not exist, so the check raises torch's own error on a box whose every
GPU is Ampere or newer. Correct: the visible GPUs (ordinals 0 .. count-1) are checked and Marlin is accepted.
"""


def observe() -> object:
    from gptqmodel.models._const import DEVICE
    from gptqmodel.nn_modules.qlinear.marlin import MarlinQuantLinear

    MarlinQuantLinear.validate_device(DEVICE.CUDA)
    return "accepted"
