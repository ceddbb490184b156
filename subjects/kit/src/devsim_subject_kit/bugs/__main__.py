"""`python -m devsim_subject_kit.bugs`: the real-bug runner's command line (`cli`)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
