"""The subject protocol's wire (docs/subject-protocol.md): JSON lines, checked against the committed schema.

devsim generates `docs/schema/subject-protocol.schema.json` from its own types; the kit ships a copy
(`subject-protocol.schema.json`, kept equal by tests/test_protocol.py) and checks every message devsim sends
(`ToSubject`) and every answer the subject writes (`FromSubject`) against it, so a subject built on the kit
cannot drift from the protocol by hand-written checks.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from typing import IO, Any

#: The highest protocol version the kit speaks; hello's version picks the answer (`negotiate`).
PROTOCOL = 2
#: The longest line either side may write.
MAX_LINE = 1 << 20


class Fatal(Exception):
    """A condition that ends the subject with a non-zero status (message on stderr)."""


class ProtocolError(Exception):
    """A message the subject cannot accept (devsim could not have sent it)."""


def log(message: str) -> None:
    """One line on stderr, prefixed so devsim's stderr tail shows whose it is."""
    print(f"devsim-subject: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- schema


@cache
def schema() -> dict[str, Any]:
    """The committed protocol schema (the kit's copy of docs/schema/subject-protocol.schema.json)."""
    text = resources.files(__package__).joinpath("subject-protocol.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator(direction: str) -> Any:
    from jsonschema import Draft202012Validator

    root = schema()
    return Draft202012Validator({"$ref": f"#/$defs/{direction}", "$defs": root["$defs"]})


@cache
def _branches(direction: str) -> dict[str, Any]:
    """The validator of each `oneOf` branch of `direction`, by the `type` constant that tells them apart. A
    message of a known type is valid for the `oneOf` exactly when it is valid for its own branch (no other branch
    accepts its type), so only that branch is checked: the others' errors would be computed and thrown away."""
    from jsonschema import Draft202012Validator

    root = schema()
    branches = {}
    for branch in root["$defs"][direction]["oneOf"]:
        kind = branch.get("properties", {}).get("type", {}).get("const")
        if isinstance(kind, str) and "type" in branch.get("required", ()):
            branches[kind] = Draft202012Validator({**branch, "$defs": root["$defs"]})
    return branches


@cache
def _compiled(direction: str) -> Callable[[Any], bool] | None:
    """jsonschema-rs's check of `direction` against the same schema (about a microsecond a message, where the
    pure-Python validator takes 0.2 to 0.6 ms: for a subject, more than most steps), or None where that optional
    package (the kit's `fast` extra) is not installed."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    root = schema()
    checker: Callable[[Any], bool] = jsonschema_rs.Draft202012Validator(
        {"$ref": f"#/$defs/{direction}", "$defs": root["$defs"]}
    ).is_valid
    return checker


def violation(msg: Any, direction: str) -> str | None:
    """Why `msg` is not a valid `ToSubject` / `FromSubject` message (None: it is). A message jsonschema-rs
    accepts is valid; any other (or one it cannot read) goes to the pure-Python validator, which decides and
    words the refusal."""
    compiled = _compiled(direction)
    if compiled is not None:
        try:
            if compiled(msg):
                return None
        except (TypeError, ValueError):  # a value JSON has no type for: the reference decides
            pass
    kind = msg.get("type") if isinstance(msg, dict) else None
    branch = _branches(direction).get(kind) if isinstance(kind, str) else None
    if branch is not None and branch.is_valid(msg):
        return None
    validator = _validator(direction)
    if validator.is_valid(msg):
        return None
    best = _best_error(validator, msg, kind)
    where = "/".join(str(p) for p in best.absolute_path) if best is not None else ""
    detail = best.message if best is not None else "does not match the schema"
    return f"a {kind or 'untyped'} message {'at ' + where + ' ' if where else ''}breaks the protocol: {detail}"


def _best_error(validator: Any, msg: Any, kind: Any) -> Any:
    """The error of the branch whose `type` matches, not the oneOf summary."""
    from jsonschema.exceptions import best_match

    errors = list(validator.iter_errors(msg))
    for error in errors:
        for sub in error.context or ():
            if sub.schema_path and kind is not None:
                branch = error.schema["oneOf"][sub.schema_path[0]] if "oneOf" in error.schema else None
                if branch and branch.get("properties", {}).get("type", {}).get("const") == kind:
                    return sub
    return best_match(errors)


def check_incoming(msg: Any) -> dict[str, Any]:
    """A message devsim sent; one the schema refuses ends the subject (devsim could not have sent it). A step
    is first checked field by field (`check_step`), which names what it lacks where the schema would only say
    that no branch matched."""
    if isinstance(msg, dict) and msg.get("type") == "step":
        try:
            check_step(msg)
        except ProtocolError as exc:
            raise Fatal(f"a step message breaks the protocol: {exc}") from exc
    problem = violation(msg, "ToSubject")
    if problem is not None:
        raise Fatal(f"{problem}: {json.dumps(msg)[:200]}")
    checked: dict[str, Any] = msg
    return checked


def check_outgoing(msg: dict[str, Any]) -> dict[str, Any]:
    """An answer about to be written; one the schema refuses is a bug of the subject."""
    problem = violation(msg, "FromSubject")
    if problem is not None:
        raise Fatal(f"the subject wrote an invalid answer ({problem}): {json.dumps(msg)[:200]}")
    return msg


# ----------------------------------------------------------------------------------------------- vocabulary
# Read from the schema, never restated: devsim's types are the one place the protocol's words are written.


def _tagged_fields(branches: list[dict[str, Any]], tag: str, common: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per value of `tag`, the keys a `oneOf` branch tagged by it requires, in the schema's order, leaving out
    the tag and the `common` keys every branch has."""
    fields: dict[str, tuple[str, ...]] = {}
    for branch in branches:
        value = branch.get("properties", {}).get(tag, {}).get("const")
        if isinstance(value, str):
            skip = (tag, *common)
            fields[value] = tuple(key for key in branch.get("required", ()) if key not in skip)
    return fields


def _words(definition: str) -> tuple[str, ...]:
    """The string constants a word of the schema (`FamilyName`, `EventName` ...) may take; an open word's
    branch for any other string (`EventName`'s) has no constant and adds none."""
    node = schema()["$defs"][definition]
    if "enum" in node:
        return tuple(str(word) for word in node["enum"])
    branches = node.get("oneOf", node.get("anyOf", ()))
    return tuple(str(branch["const"]) for branch in branches if "const" in branch)


def _step_branches() -> list[dict[str, Any]]:
    """The `oneOf` of the `step` message: one branch per action."""
    for branch in schema()["$defs"]["ToSubject"]["oneOf"]:
        if branch.get("properties", {}).get("type", {}).get("const") == "step":
            found: list[dict[str, Any]] = branch["oneOf"]
            return found
    raise Fatal("the kit's protocol schema has no step message")


#: The keys every step carries besides `action`.
STEP_HEAD = ("scenario", "number")
#: Per action, the fields a step of that action carries (from the schema's `step` branches).
STEP_FIELDS: dict[str, tuple[str, ...]] = _tagged_fields(_step_branches(), "action", STEP_HEAD)
#: Per selector form, the fields a selector of that form carries (from `SelectorMessage`).
SELECTOR_FIELDS: dict[str, tuple[str, ...]] = _tagged_fields(
    schema()["$defs"]["SelectorMessage"]["oneOf"], "form", ()
)
#: The step fields that hold a selector (`device`, `scope`).
SELECTOR_KEYS: tuple[str, ...] = tuple(
    sorted(
        {
            key
            for branch in _step_branches()
            for key, field in branch.get("properties", {}).items()
            if field.get("$ref") == "#/$defs/SelectorMessage"
        }
    )
)
#: Every family a `family_enum` selector may name, `all` (lock scopes) included.
SELECTOR_FAMILIES: tuple[str, ...] = _words("FamilyName")
#: Every trace event devsim knows (a handshake's `events` and an answer's `trace` name them).
EVENTS: tuple[str, ...] = _words("EventName")
#: Every error kind devsim knows (an answer's `error.kind`).
ERROR_KINDS: tuple[str, ...] = _words("ErrorKind")
#: The device families, `all` left out.
FAMILIES: tuple[str, ...] = tuple(family for family in SELECTOR_FAMILIES if family != "all")


def check_step(msg: dict[str, Any]) -> None:
    """A step devsim could not have sent is a protocol error, never an observation of the code under test."""
    for key in (*STEP_HEAD, "action"):
        if key not in msg:
            raise ProtocolError(f"a step without {key!r}: {msg}")
    needed = STEP_FIELDS.get(msg["action"])
    if needed is None:
        return  # unknown actions are answered `unsupported`
    for key in needed:
        if key not in msg:
            raise ProtocolError(f"a {msg['action']} step without {key!r}: {msg}")
    for key in SELECTOR_KEYS:
        if key in msg:
            sel = msg[key]
            if not isinstance(sel, dict) or sel.get("form") not in SELECTOR_FIELDS:
                raise ProtocolError(f"{key} is not a selector: {sel!r}")
            for field_name in SELECTOR_FIELDS[sel["form"]]:
                if field_name not in sel:
                    raise ProtocolError(f"a {sel['form']} selector without {field_name!r}: {sel!r}")
            if sel["form"] == "family_enum" and sel["family"] not in SELECTOR_FAMILIES:
                raise ProtocolError(f"unknown family {sel['family']!r}")


def negotiate(offered: Any) -> int:
    """The highest protocol version both sides speak: hello's version, capped at ours. devsim refuses a
    version it did not offer, so a version below 1 (or not an integer) ends the subject."""
    if isinstance(offered, bool) or not isinstance(offered, int) or offered < 1:
        raise Fatal(f"hello offers protocol {offered!r}; this subject speaks 1 to {PROTOCOL}")
    return min(offered, PROTOCOL)


# ----------------------------------------------------------------------------------------------- I/O


def claim_stdout() -> IO[bytes]:
    """Keep the real stdout for protocol lines only; everything else written to fd 1 goes to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    # A buffered text stream on fd 1 (not write-through), so that libraries do not wrap it in a queueing thread.
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    return protocol


class LineReader:
    """Unbuffered-enough line reader on a raw descriptor (a forked child must not inherit read-ahead)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self) -> bytes | None:
        """The next line without its newline; None at end of input."""
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                if self.buffer.strip():
                    line, self.buffer = self.buffer, b""
                    return line
                return None
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE and b"\n" not in self.buffer:
                raise Fatal("a line longer than 1 MiB arrived")
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


def parse(line: bytes) -> dict[str, Any]:
    """One JSON object with a string `type`, or Fatal."""
    try:
        msg = json.loads(line)
    except json.JSONDecodeError as exc:
        raise Fatal(f"not a JSON line: {line[:200]!r} ({exc})") from exc
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise Fatal(f"not a protocol message (no type): {line[:200]!r}")
    return msg


def messages(reader: LineReader) -> Iterator[dict[str, Any]]:
    """Every protocol message from devsim until stdin closes (blank lines skipped), each schema-checked."""
    while True:
        line = reader.next()
        if line is None:
            return
        if line.strip():
            yield check_incoming(parse(line))


def encode(msg: dict[str, Any]) -> bytes:
    """One compact JSON line."""
    data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    if len(data) > MAX_LINE:
        raise Fatal(f"an answer longer than 1 MiB for {msg.get('type')}")
    return data
