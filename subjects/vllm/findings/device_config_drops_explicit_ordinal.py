"""vLLM 0.33.0's `DeviceConfig` keeps only the type of a `torch.device` it is given: `torch.device("cuda", 1)`
becomes `torch.device("cuda")`, the current device, while the string "cuda:1" keeps its index.

Scenario: none in the corpus is applicable to vLLM (the resolve scenarios with an explicit torch.device also
normalize, which vLLM has no API for), so the corpus does not count it. Rule: policy:explicit-ordinal-kept (an
explicit ordinal survives to the torch boundary as written; AGENTS.md rule 3). Code: vllm/config/device.py,
`DeviceConfig.__post_init__` (`device_type = device.type`, then `torch.device(device_type)`).
"""

from _setup import R9700, simulate, verdict
from devsim_subject_kit import Host

simulate(Host(torch="hip", gpus=(R9700, R9700), visible=(0, 1)))
import torch
from vllm.config.device import DeviceConfig

given, written = DeviceConfig(device=torch.device("cuda", 1)).device, DeviceConfig(device="cuda:1").device
print(f"DeviceConfig(device=torch.device('cuda', 1)).device = {given!r}; DeviceConfig(device='cuda:1') = {written!r}")
verdict(given == torch.device("cuda") and written == torch.device("cuda", 1),
        "an explicit torch.device ordinal is dropped; the same ordinal as a string is kept")
