"""bitsandbytes PR #1889: `cuda_specs.get_cuda_version_string` turns the runtime version into the native
library's tag as `major * 10 + minor`, so ROCm 7.12 (`torch.version.hip` "7.12.x") gives "82" and bitsandbytes
looks for `libbitsandbytes_rocm82.so`, a ROCm 8.2 library. Correct: "712" (major and minor concatenated; CUDA
12.4 stays "124").
"""


def observe() -> object:
    from bitsandbytes.cuda_specs import get_cuda_version_string

    return get_cuda_version_string()
