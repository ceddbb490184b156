"""pytorch/ao PR #4640: the CUDA 12.9 rowwise-fp8 warning check reads `torch.version.cuda.startswith` on a HIP
build, where `torch.version.cuda` is None while `torch.cuda.is_available()` is True.

Observed: how many warnings `_maybe_warn_rowwise_fp8_cuda_12_9` emits for a rowwise (PerRow) float8 config on
the host. Correct on ROCm: it returns without warning (0); the bug: it raises AttributeError on None.
"""

from __future__ import annotations

import warnings


def observe() -> object:
    from torchao.quantization.granularity import PerRow
    from torchao.quantization.quant_api import (
        Float8DynamicActivationFloat8WeightConfig,
        _maybe_warn_rowwise_fp8_cuda_12_9,
    )

    config = Float8DynamicActivationFloat8WeightConfig(granularity=PerRow())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _maybe_warn_rowwise_fp8_cuda_12_9(config)
    return sum("CUDA 12.9" in str(w.message) for w in caught)
