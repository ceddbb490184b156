"""TransformerLens PR #906: `device="cuda:1"` with one device lands on cuda:0.

A model configured for `cuda:1` and `n_devices=1` is moved by `get_best_available_device(cfg)`; the buggy
version picks the GPU with the most free memory among the first `n_devices` GPUs, i.e. always cuda:0. We build a
tiny model from a config (no download) on a two-GPU host and report where its parameters landed: the explicit
ordinal must be kept (`cuda:1`); `cuda:0` is the misbehaviour.
"""

from __future__ import annotations


def observe() -> object:
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(
        n_layers=2, d_model=8, n_ctx=8, d_head=4, n_heads=2, d_vocab=16, act_fn="relu",
        device="cuda:1", n_devices=1,
    )
    model = HookedTransformer(cfg)
    devices = sorted({str(p.device) for p in model.parameters()})
    return devices[0] if len(devices) == 1 else ",".join(devices)
