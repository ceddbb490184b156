"""python -m devsim_subject_vllm: a devsim subject (protocol 2) for vLLM, served by the kit."""

import sys

from devsim_subject_kit import serve

from .subject import Subject


def load(live: bool) -> Subject:
    """Patch torch and the management libraries to a simulated host, then import vLLM's selection code."""
    subject = Subject()
    subject.load(live=live)
    return subject


sys.exit(serve(load))
