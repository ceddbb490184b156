"""python -m devsim_subject_gptqmodel: a devsim subject (protocols 1 and 2) for GPTQModel, served by the kit."""

import sys

from devsim_subject_kit import serve

from .subject import Subject

# GPTQModel's own switches, set before it is imported: no CUDA extension build at import, logbar headless.
ENVIRONMENT = {"BUILD_CUDA_EXT": "0"}


def load(live: bool) -> Subject:
    """Import GPTQModel on the simulated (or, live, the real) torch and read its contracts."""
    subject = Subject()
    subject.load(live=live)
    return subject


sys.exit(serve(load, ENVIRONMENT))
