"""DeepSpeed PR #6909: `torch.version.cuda.split` in the op builder on a ROCm build.

On a HIP build `torch.version.cuda` is None. When a CUDA toolkit is also installed (torch's
`cpp_extension.CUDA_HOME` set, `nvcc -V` answering), building a CPU op's compile flags
(`TorchCPUOpBuilder.cxx_args` → `is_cuda_enable` → `assert_no_cuda_mismatch`) runs
`torch.version.cuda.split('.')` and fails with AttributeError; the fix skips the CUDA check on ROCm and
compiles with `-D__DISABLE_CUDA__`.

observe() returns the CUDA flag `cxx_args()` chose for cpu_adam. An AttributeError is re-raised as the
misbehaviour only when it comes from DeepSpeed's own `torch.version.cuda` read in `op_builder/builder.py`;
any other AttributeError is a harness problem and raised as RuntimeError (an error, never a misbehaviour).
"""

from __future__ import annotations

import traceback


def observe() -> object:
    from deepspeed.ops.op_builder import CPUAdamBuilder

    try:
        args = CPUAdamBuilder().cxx_args()
    except AttributeError as err:
        last = traceback.extract_tb(err.__traceback__)[-1]
        if last.filename.endswith("op_builder/builder.py") and "torch.version.cuda" in (last.line or ""):
            raise
        raise RuntimeError(f"unexpected AttributeError at {last.filename}:{last.lineno}: {err}") from err
    flags = [a for a in args if a in ("-D__ENABLE_CUDA__", "-D__DISABLE_CUDA__")]
    return flags[0] if len(flags) == 1 else repr(args)
