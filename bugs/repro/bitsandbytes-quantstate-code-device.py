"""bitsandbytes #1527 / PR #1528: `QuantState.to(device)` moves `absmax` (and the nested state) but not `code`,
the 4-bit lookup table, so after `to("cuda:1")` the table stays on cuda:0 and the next dequantize mixes two
GPUs. The state is built as bitsandbytes builds one for NF4 (`get_4bit_type("nf4")` as its code), with no
native call. Correct: `code` lands on cuda:1 with the rest.
"""


def observe() -> object:
    import torch
    from bitsandbytes.functional import QuantState, get_4bit_type

    code = get_4bit_type("nf4", device="cuda:0")
    absmax = torch.ones(4, device="cuda:0")
    state = QuantState(absmax=absmax, shape=torch.Size([16, 16]), code=code, blocksize=64, quant_type="nf4",
                       dtype=torch.float16)
    state.to("cuda:1")
    if state.absmax.device != torch.device("cuda:1"):
        raise AssertionError(f"absmax itself did not move: {state.absmax.device}")
    return state.code
