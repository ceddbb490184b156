"""`torch.compile` on a simulated host: the compiled wrapper is built when it is first called to compile.

On a real machine `torch.compile(fn)` returns a wrapper at once and compiles on its first call; building that
wrapper already costs: the first one imports torch's inductor (about a second, e.g. during bitsandbytes' import,
whose ops are decorated), and each one copies inductor's configuration (about 5 ms: GPTQModel's torch kernels
compile their dequantization in every `post_init`). A simulated host never compiles anything: its warmups run
under the `force_eager` stance, which runs every compiled function as written.

`deferred(compile)` is a `torch.compile` that returns, for a function, a wrapper of it (`functools.wraps`) that
under `force_eager` calls the function itself, as dynamo does, and otherwise calls the real `torch.compile` once,
with the same arguments, and from then on its result. Nothing else changes: a module (`nn.Module`, which the
caller goes on using as a module) and `disable=True` go to the real `torch.compile` at once, and so does
decorator form once it is given its function. What the real call raises for bad arguments is raised at the
first call that compiles instead of at the decoration.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch


def deferred(compile_: Callable[..., Any]) -> Callable[..., Any]:
    """A `torch.compile` that defers `compile_` (the real one) until a call needs it."""

    @functools.wraps(compile_)
    def compile(model: Any = None, **options: Any) -> Any:
        if model is None:  # decorator form: @torch.compile(...)
            return functools.partial(compile, **options)
        if isinstance(model, torch.nn.Module) or options.get("disable") or not callable(model):
            return compile_(model, **options)
        compiled: Callable[..., Any] | None = None

        @functools.wraps(model)
        def run(*args: Any, **kwargs: Any) -> Any:
            nonlocal compiled
            if forcing_eager():
                return model(*args, **kwargs)
            if compiled is None:
                compiled = compile_(model, **options)
            return compiled(*args, **kwargs)

        return run

    compile.__wrapped__ = compile_
    return compile


def forcing_eager() -> bool:
    """Whether torch's compiler stance is `force_eager` (every compiled function runs as written). Setting a
    stance imports dynamo's `eval_frame`, so without it the stance is the default; a torch without the stance
    (or with its internals moved) answers False, so the real compile runs."""
    stance = getattr(sys.modules.get("torch._dynamo.eval_frame"), "_stance", None)
    return getattr(stance, "stance", None) == "force_eager"
