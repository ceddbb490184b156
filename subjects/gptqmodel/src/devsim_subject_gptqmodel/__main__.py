"""python -m devsim_subject_gptqmodel: a devsim subject (protocol v1) for GPTQModel."""

import sys

from .server import main

sys.exit(main())
