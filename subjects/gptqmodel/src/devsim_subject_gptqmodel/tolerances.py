"""The numerics tolerances GPTQModel's own kernel tests state, read from the test file itself (never typed here).

GPTQModel's `tests/kernels/test_gptq.py` compares each GPTQ kernel's output with its Torch kernel's on the same
weights and input: `torch.isclose(reference, actual, rtol=R, atol=A)` in `_summarize_results`, with one `atol`
per backend and dtype in the class attributes `float16_cases` / `bfloat16_cases` (tuples `(BACKEND.X,
torch.float16, atol)`), and the backend's class in the class's `BACKEND.X: ClassName` map. The reference is the
backend whose forward fills the `reference_outputs` the float16 test passes. All of that is read from the
file's syntax tree; where a piece cannot be found the file states no tolerance this module can read, and the
seed's applies (said so, never guessed).

The tests are not in GPTQModel's sdist: `DEVSIM_GPTQMODEL_TESTS` names a checkout's `tests` folder; by default
`tests/` beside the judged `gptqmodel` package (a git checkout has it).
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

GPTQ_TESTS = Path("kernels") / "test_gptq.py"
DTYPES = {"float16_cases": "float16", "bfloat16_cases": "bfloat16"}


@dataclass(frozen=True)
class Stated:
    """A tolerance the project states for one kernel class and dtype, against its reference class."""

    cls_name: str
    dtype: str
    rtol: float
    atol: float
    reference_cls: str
    source: str


def tests_folder(package_dir: Path) -> Path:
    """Where GPTQModel's tests are: `DEVSIM_GPTQMODEL_TESTS`, else `tests/` beside the package."""
    override = os.environ.get("DEVSIM_GPTQMODEL_TESTS")
    return Path(override) if override else package_dir.parent / "tests"


def read(tests: Path) -> tuple[list[Stated], str]:
    """The tolerances `tests/kernels/test_gptq.py` states, and a note saying where they came from or why none."""
    path = tests / GPTQ_TESTS
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        return [], f"GPTQModel's kernel tests were not read ({path}: {type(exc).__name__}), so the seed's tolerance applies"
    revision = hashlib.sha256(text.encode()).hexdigest()[:12]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        stated = _from_class(cls, f"tests/{GPTQ_TESTS.as_posix()}", revision)
        if stated:
            return stated, f"tolerances read from {path} (sha256 {revision})"
    return [], f"{path} states no per-backend tolerance table this subject can read, so the seed's tolerance applies"


def _from_class(cls: ast.ClassDef, relpath: str, revision: str) -> list[Stated]:
    classes = _backend_classes(cls)
    rtol = _isclose_rtol(cls)
    reference = _reference_backend(cls)
    if not classes or rtol is None or reference is None or reference not in classes:
        return []
    stated = []
    for node in cls.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        dtype = DTYPES.get(node.targets[0].id)
        if dtype is None or not isinstance(node.value, ast.List):
            continue
        for case in node.value.elts:
            row = _case(case)
            if row is None or row[0] not in classes:
                continue
            backend, atol = row
            source = f"{relpath}::{cls.name}.{node.targets[0].id} (line {case.lineno}; rtol from _summarize_results; sha256 {revision})"
            stated.append(Stated(classes[backend], dtype, rtol, atol, classes[reference], source))
    return stated


def _backend(node: ast.expr) -> str | None:
    """`BACKEND.X` -> `X`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "BACKEND":
        return node.attr
    return None


def _case(node: ast.expr) -> tuple[str, float] | None:
    """`(BACKEND.X, torch.float16, 0.0068)` -> (`X`, 0.0068)."""
    if not (isinstance(node, ast.Tuple) and len(node.elts) == 3):
        return None
    backend = _backend(node.elts[0])
    atol = node.elts[2]
    if backend is None or not (isinstance(atol, ast.Constant) and isinstance(atol.value, (int, float))):
        return None
    return backend, float(atol.value)


def _backend_classes(cls: ast.ClassDef) -> dict[str, str]:
    """The class's `{BACKEND.X: ClassName, …}` map."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Dict) and node.keys:
            pairs = {
                _backend(key): value.id
                for key, value in zip(node.keys, node.values)
                if key is not None and isinstance(value, ast.Name)
            }
            if None not in pairs and len(pairs) == len(node.keys):
                return {k: v for k, v in pairs.items() if k is not None}
    return {}


def _function(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _isclose_rtol(cls: ast.ClassDef) -> float | None:
    """The `rtol=` constant of the `torch.isclose` call in `_summarize_results`."""
    function = _function(cls, "_summarize_results")
    for node in ast.walk(function) if function else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "isclose":
            for keyword in node.keywords:
                if keyword.arg == "rtol" and isinstance(keyword.value, ast.Constant):
                    value = keyword.value.value
                    if isinstance(value, (int, float)):
                        return float(value)
    return None


def _reference_backend(cls: ast.ClassDef) -> str | None:
    """The backend whose forward fills `data.<attr>`, where the float16 test passes
    `reference_outputs=data.<attr>.outputs`."""
    test = _function(cls, "test_kernel_float16")
    attr = None
    for node in ast.walk(test) if test else ():
        if isinstance(node, ast.keyword) and node.arg == "reference_outputs":
            value = node.value
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute):
                attr = value.value.attr
    if attr is None:
        return None
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attr for t in node.targets):
            call = node.value
            if isinstance(call, ast.Call):
                for keyword in call.keywords:
                    if keyword.arg == "backend":
                        return _backend(keyword.value)
    return None
