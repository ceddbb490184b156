"""The kit's fake devsim (devsim_subject_kit.testing), driving `python -m devsim_subject_gptqmodel`."""

from __future__ import annotations

from devsim_subject_kit import testing
from devsim_subject_kit.testing import (  # noqa: F401 - re-exported for the tests
    AMD_MIXED,
    CPU,
    H200,
    H200X2,
    MI300X,
    R9700,
    R9700X2,
    ProtocolViolation,
    fam,
    gpu,
    host,
    o,
    s,
    tdev,
)


class Driver(testing.Driver):
    """The fake devsim driving the GPTQModel subject."""

    def __init__(self, env: dict[str, str], timeout: float = 120.0) -> None:
        super().__init__("devsim_subject_gptqmodel", env, timeout)
