"""Case files of the real-bug runner: a good one loads; each bad one is an error naming the file, the line of
the offending key and what was expected (one row of BAD per mistake, no session started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bugs_fake import Fake, case_text, make_fake
from conftest import REPO
from devsim_subject_kit.bugs.case import CaseError, Expectation
from devsim_subject_kit.bugs.load import Context, load_case
from devsim_subject_kit.bugs.locate import Lines
from devsim_subject_kit.bugs.observe import matches
from devsim_subject_kit.bugs.runner import read_rules

RULES = read_rules(REPO / "inventory" / "rules.toml")
MISSING = "0123456789abcdef0123456789abcdef01234567"

# (what is wrong, the text replaced, its replacement, the line's marker in the new text, the message's start)
BAD = [
    ("unknown top key", 'rule = "no-cross-vendor-probe"\n', 'rule = "no-cross-vendor-probe"\nrulez = 1\n',
     "rulez = 1", "unknown key 'rulez' in the case; expected one of:"),
    ("id not the stem", 'id = "fastdtype-bf16"', 'id = "other"', 'id = "other"',
     "'id' is 'other': expected the file's stem 'fastdtype-bf16'"),
    ("unknown rule", 'rule = "no-cross-vendor-probe"', 'rule = "no-such-rule"', 'rule = "no-such-rule"',
     "'rule' is 'no-such-rule': expected an id of inventory/rules.toml"),
    ("unknown host", 'hosts = ["rdna2"]', 'hosts = ["rdna9"]', 'hosts = ["rdna9"]',
     "unknown host rdna9: expected a built-in profile (devsim hosts) or bugs/hosts/<name>.toml"),
    ("short commit", "@BUGGY@", "abc123", 'commit = "abc123"',
     "'commit' is 'abc123': expected a full 40-hex commit (lowercase)"),
    ("commit not in the mirror", "@BUGGY@", MISSING, f'commit = "{MISSING}"',
     f"commit {MISSING} does not exist in the mirror"),
    ("misspelt side", "[fixed]\ncommit", "[fixd]\ncommit", "[fixd]", "unknown key 'fixd' in the case"),
    ("missing fixed side", '[fixed]\ncommit = "@FIXED@"\n', "", "format = 1", "missing [fixed]: expected a table"),
    ("path escaping the tree", 'paths = ["fastdtype", "tests"]', 'paths = ["../etc"]', 'paths = ["../etc"]',
     "paths names '../etc': expected a relative path inside the tree"),
    ("absolute path", 'paths = ["fastdtype", "tests"]', 'paths = ["/etc"]', 'paths = ["/etc"]',
     "paths names '/etc': expected a relative path inside the tree"),
    ("env naming PATH", 'env = { FASTDTYPE_FLAG = "1" }', 'env = { PATH = "/x" }', 'env = { PATH = "/x" }',
     "env names 'PATH': expected a variable other than PATH, LD_* and PYTHON*"),
    ("env naming LD_PRELOAD", 'env = { FASTDTYPE_FLAG = "1" }', 'env = { LD_PRELOAD = "x" }',
     'env = { LD_PRELOAD', "env names 'LD_PRELOAD'"),
    ("env naming PYTHONPATH", 'env = { FASTDTYPE_FLAG = "1" }', 'env = { PYTHONPATH = "x" }',
     'env = { PYTHONPATH', "env names 'PYTHONPATH'"),
    ("unpinned extra", 'stubs = ["aiohttp"]', 'pip = ["einops"]', 'pip = ["einops"]',
     "'pip' is ['einops']: expected a list of pinned requirements (name==version)"),
    ("index without releases", 'from = "git"', 'from = "index"', 'from = "index"',
     "installing from the index needs 'release' on every side"),
    ("repro naming no script", 'script = "repro/fastdtype-bf16.py"\n', "", '[[trigger]]\nkind = "repro"',
     "missing 'script': expected a repro script relative to bugs/"),
    ("script not there", 'script = "repro/fastdtype-bf16.py"', 'script = "repro/nope.py"',
     'script = "repro/nope.py"', "script 'repro/nope.py' is not a Python file in"),
    ("script escaping bugs/", 'script = "repro/fastdtype-bf16.py"', 'script = "../work/fastdtype/__init__.py"',
     'script = "../work', "script names '../work/fastdtype/__init__.py': expected a relative path inside bugs/"),
    ("two misbehaviours", 'misbehaves = { returns = "bfloat16" }',
     'misbehaves = { returns = "bfloat16", device = "cuda:0" }', "misbehaves = {",
     "'misbehaves' is {'returns': 'bfloat16', 'device': 'cuda:0'}: expected exactly one of returns, raises, device"),
    ("suite naming no test", 'tests = ["tests/test_dtype.py"]', "tests = []", "tests = []",
     "'tests' is []: expected a non-empty list of the project's test files or node ids"),
    ("suite test escaping the tree", 'tests = ["tests/test_dtype.py"]', 'tests = ["../x.py::t"]',
     'tests = ["../x.py', "tests names '../x.py': expected a relative path inside the tree"),
    ("unknown trigger kind", 'kind = "import"', 'kind = "imports"', 'kind = "imports"',
     "'kind' is 'imports': expected repro, suite or import"),
    ("unknown trigger key", 'modules = ["fastdtype", "aiohttp.web"]', 'module = ["fastdtype"]', 'module = [',
     "unknown key 'module' in a [[trigger]] of kind import"),
    ("not TOML", 'title = "', 'title = ', 'title = bf16', "not TOML:"),
]


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Fake:
    return make_fake(tmp_path_factory.mktemp("fake"))


def context(fake: Fake) -> Context:
    return Context(bugs_dir=fake.bugs, rules=RULES, hosts=frozenset({"rdna2", "r9700x2", "h200"}),
                   mirrors=fake.mirrors)


def write(fake: Fake, text: str, name: str = "fastdtype-bf16") -> Path:
    path = fake.bugs / f"{name}.toml"
    path.write_text(text)
    return path


def test_the_good_case_loads(fake: Fake) -> None:
    case = load_case(write(fake, case_text(fake)), context(fake))
    assert [s.commit for s in case.sides] == [fake.buggy, fake.fixed]
    assert case.install.source == "git" and case.install.pythonpath == (".",)
    assert [(t.label, t.hosts, t.line) for t in case.triggers] == [
        ("repro#1", ("rdna2",), 21), ("suite#2", ("rdna2",), 28), ("import#3", ("rdna2",), 32)]
    assert case.triggers[0].misbehaves == Expectation("returns", "bfloat16")


@pytest.mark.parametrize(("old", "new", "marker", "message"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_a_bad_case_names_its_file_line_and_what_was_expected(fake: Fake, old: str, new: str, marker: str,
                                                                message: str) -> None:
    good = case_text(fake).replace(fake.buggy, "@BUGGY@", 1).replace(fake.fixed, "@FIXED@", 1)
    assert old in good, old
    text = good.replace(old, new, 1).replace("@BUGGY@", fake.buggy).replace("@FIXED@", fake.fixed)
    line = text[:text.index(marker)].count("\n") + 1
    path = write(fake, text)
    with pytest.raises(CaseError) as raised:
        load_case(path, context(fake))
    assert (raised.value.path, raised.value.line) == (path, line), str(raised.value)
    assert raised.value.message.startswith(message), raised.value.message
    assert str(raised.value).startswith(f"{path}:{line}: ")


def test_a_script_symlinked_out_of_bugs_is_refused(fake: Fake, tmp_path: Path) -> None:
    outside = tmp_path / "evil.py"
    outside.write_text("def observe():\n    return 1\n")
    link = fake.bugs / "repro" / "link.py"
    link.symlink_to(outside)
    try:
        text = case_text(fake).replace("repro/fastdtype-bf16.py", "repro/link.py")
        with pytest.raises(CaseError, match="resolves outside bugs/"):
            load_case(write(fake, text), context(fake))
    finally:
        link.unlink()


def test_a_control_has_only_a_buggy_side(fake: Fake) -> None:
    text = case_text(fake).replace('hosts = ["rdna2"]', 'hosts = ["rdna2"]\ncontrol = true')
    with pytest.raises(CaseError, match=r"a control \(control = true\) has only \[buggy\]") as raised:
        load_case(write(fake, text), context(fake))
    assert raised.value.line == text.splitlines().index("[fixed]") + 1


LINES = '''a = 1
[buggy]
commit = "x"

[[trigger]]
kind = "repro"

[[trigger]]
kind = "suite"
tests = []
'''


@pytest.mark.parametrize(("table", "key", "line"), [
    ((), "a", 1), (("buggy",), "commit", 3), (("buggy",), "release", 2), (("trigger", 0), "kind", 6),
    (("trigger", 1), "kind", 9), (("trigger", 1), "tests", 10), (("trigger", 1), None, 8), (("nope",), "x", 1),
])
def test_lines_finds_a_key_in_its_table(table: tuple[str | int, ...], key: str | None, line: int) -> None:
    assert Lines(LINES).find(table, key) == line


OBSERVED = {"returned": None, "returned_repr": "None", "raised": "TypeError: 'NoneType' object is not subscriptable",
            "raised_types": ["TypeError", "Exception", "BaseException", "object"], "device": None}


@pytest.mark.parametrize(("kind", "value", "observation", "expected"), [
    ("returns", True, {"returned": True, "raised": None}, True),
    ("returns", 1, {"returned": True, "raised": None}, False),  # a bool is not the number 1
    ("returns", "bfloat16", {"returned": "bfloat16", "raised": None}, True),
    ("returns", "torch.bfloat16", {"returned": "torch.bfloat16", "returned_repr": "torch.bfloat16", "raised": None},
     True),
    ("returns", [0, 1], {"returned": [0, 1], "raised": None}, True),
    ("returns", None, OBSERVED, False),  # an exception is never a returned value
    ("raises", "TypeError", OBSERVED, True),
    ("raises", "Exception", OBSERVED, True),  # a base class's name
    ("raises", "TypeError: not subscriptable", OBSERVED, True),
    ("raises", "TypeError: no such text", OBSERVED, False),
    ("raises", "KeyError", OBSERVED, False),
    ("raises", True, OBSERVED, True),
    ("raises", True, {"returned": 1, "raised": None}, False),
    ("device", "cuda:0", {"device": "cuda:0", "raised": None}, True),
    ("device", "cuda:0", {"device": "cuda:1", "raised": None}, False),
])
def test_an_observation_matches_its_expectation(kind: str, value: object, observation: dict[str, object],
                                                expected: bool) -> None:
    assert matches(Expectation(kind, value), observation) is expected


DOC = REPO / "docs" / "real-bugs-format.md"


def test_the_format_reference_example_loads_and_names_every_key(tmp_path: Path) -> None:
    """docs/real-bugs-format.md and the loader agree: its example loads as written, and every key the loader
    accepts is in the reference."""
    from devsim_subject_kit.bugs import load

    text = DOC.read_text()
    example = text.split("## An example\n\n```toml fragment\n", 1)[1].split("```", 1)[0]
    bugs = tmp_path / "bugs"
    (bugs / "repro").mkdir(parents=True)
    (bugs / "repro" / "comfyui-bf16-rdna2.py").write_text("def observe():\n    return True\n")
    (bugs / "comfyui-bf16-rdna2.toml").write_text(example)
    ctx = Context(bugs_dir=bugs, rules=RULES, hosts=frozenset({"rdna2_gfx1030"}), mirrors=None)
    case = load_case(bugs / "comfyui-bf16-rdna2.toml", ctx)
    assert [t.kind for t in case.triggers] == ["repro", "suite", "import"] and case.install.source == "git"
    keys = load._TOP | load._SIDE | load._INSTALL | set().union(*load._TRIGGER.values()) | set(load._EXPECT)
    missing = sorted(k for k in keys if not any(f"`{form}`" in text for form in (k, f"[{k}]", f"[[{k}]]")))
    assert not missing, f"docs/real-bugs-format.md does not describe {missing}"
