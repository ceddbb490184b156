"""A dispatch sanitizer: every device-dispatch rule a run on a simulated host breaks, flagged at the project's
own line, whether a test asks or not (`pytest --devsim-host P --devsim-sanitize[=report|error]`,
docs/sanitizer.md).

One module per job: `frames` (which frame is the project's), `flags` (the flag record, deduplicated by site),
`suppress` (the suppressions file), one module per family of checks (`vendor`, `queries`, `placement`,
`threadctx`, `masks`), `core` (installing them), `plugin` (a session child's hooks) and `report` (the terminal
section).
"""

from __future__ import annotations

from .core import Sanitizer
from .flags import MODES, RULES, Flag, FlagTable, merge
from .suppress import SuppressionError, Suppressions, load

#: The environment variable that turns the sanitizer on where the kit boots a simulated host (report|error).
SANITIZE_ENV = "DEVSIM_SANITIZE"

__all__ = ["MODES", "RULES", "SANITIZE_ENV", "Flag", "FlagTable", "Sanitizer", "SuppressionError", "Suppressions",
           "load", "merge"]
