"""python -m devsim_subject_bitsandbytes: a devsim subject (protocol 2) for bitsandbytes, served by the kit."""

import sys

from devsim_subject_kit import serve

from .subject import Subject


def load(live: bool) -> Subject:
    """Patch torch to a simulated host; bitsandbytes itself is imported per scenario, on that scenario's host."""
    subject = Subject()
    subject.load(live=live)
    return subject


sys.exit(serve(load))
