"""Safe YAML loading into pydantic models; errors name the file, the key and what was expected."""

from __future__ import annotations

import difflib
import reprlib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io.bounded_read import read_text

M = TypeVar("M", bound=BaseModel)


MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A config file larger than this is refused (configs are a few kB; this bounds parse time and memory)."""
MAX_EXPANDED_NODES = 200_000
"""Bound on the YAML node count after expanding aliases (refuses 'billion laughs' alias bombs)."""
MAX_DEPTH = 200
"""Bound on the nesting depth of a config."""

KNOWN_SECTIONS = frozenset(
    {
        "evaluate", "bags", "confusion", "pcd", "verification", "bbsl", "monitors", "returns", "episodes",
        "requirements", "safety_monitor", "bbsl_monitor", "returns_logger", "online", "detector", "executor",
    }
)  # fmt: skip
"""Top-level sections the package's configs use; a near miss of one of them is reported as a typo."""

_quote = reprlib.Repr()
_quote.maxstring = 60
_quote.maxother = 60
_quote.maxlist = _quote.maxdict = _quote.maxtuple = _quote.maxset = 4
_quote.maxlevel = 2


def quote_value(value: Any) -> str:
    """A bounded-size repr of a value for error messages (a huge or deeply nested input stays one short line)."""
    return _quote.repr(value)


class ConfigError(PerceptionSafetyError):
    """A configuration file is unreadable, not YAML, or fails validation."""


class _Bounded:
    """Mixin for a safe loader: refuses duplicate keys and documents whose alias-expanded size or depth exceeds
    the bounds."""

    def construct_document(self, node: yaml.Node) -> Any:
        _check_node_graph(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A key written twice in one mapping is an error (PyYAML would silently keep the last value)."""
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *base' then overriding a key is allowed
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first is not key_node.start_mark:
                raise _GraphError(f"duplicate key {quote_value(key)} (first at line {first.line + 1})",
                                  key_node.start_mark)
        return super().construct_mapping(node, deep)


class _BoundedSafeLoader(_Bounded, yaml.SafeLoader):
    """``yaml.SafeLoader`` with the bounds: pure Python, so deep nesting is a RecursionError, not a crash."""


class _FastBoundedSafeLoader(_Bounded, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same checks over libyaml's parser (~8x faster on a bag's metadata.yaml). libyaml composes nested nodes by C
recursion and crashes the process (SIGSEGV) past ~20 000 levels, so it only gets documents that cannot nest that
deep (`_loader_for`)."""

MAX_FAST_INDICATORS = 4_000
"""Every nesting level needs one of ``[ { - : ?``; a text with fewer than this many cannot nest deeper, so
libyaml's C recursion stays far inside any thread's stack."""


def _loader_for(text: str) -> type[yaml.SafeLoader]:
    indicators = sum(text.count(c) for c in "[{-:?")
    return _FastBoundedSafeLoader if indicators < MAX_FAST_INDICATORS else _BoundedSafeLoader


def _check_node_graph(root: yaml.Node) -> None:
    """Count nodes with aliases expanded (memoised per node, so linear in the graph) and the depth, iteratively."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, expanded = stack.pop()
        if depth > MAX_DEPTH:
            mark = node.start_mark
            raise _GraphError(f"nested deeper than {MAX_DEPTH} levels", mark)
        children = _children(node)
        if not expanded:
            if id(node) in size:
                continue
            stack.append((node, depth, True))
            stack.extend((c, depth + 1, False) for c in children if id(c) not in size)
            continue
        total = 1 + sum(size.get(id(c), 1) for c in children)
        if total > MAX_EXPANDED_NODES:
            raise _GraphError(
                f"expands to more than {MAX_EXPANDED_NODES} values (aliases repeating aliases?)", node.start_mark
            )
        size[id(node)] = total


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _GraphError(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping safely (no object construction, bounded size, depth and alias expansion)."""
    path = Path(path)
    text = read_text(path, MAX_CONFIG_BYTES, "config", ConfigError)  # the read itself is bounded (/dev/zero)
    return parse_yaml(text, str(path))


def parse_yaml(text: str, source: str, error: type[PerceptionSafetyError] = ConfigError) -> dict[str, Any]:
    """Parse YAML text into a mapping with the bounded safe loader; ``error`` (naming ``source`` and the
    line:column) for invalid YAML, duplicate keys, alias bombs or a top level that is not a mapping."""
    data = parse_yaml_document(text, source, error)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def parse_yaml_document(text: str, source: str, error: type[PerceptionSafetyError] = ConfigError) -> Any:
    """Any YAML document (mapping, list, scalar or None) through the bounded safe loader; errors as `parse_yaml`."""
    try:
        loader = _loader_for(text)(text)  # a SafeLoader subclass (safe constructor): no Python objects are built
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{where}: invalid YAML: {problem}") from exc
    except RecursionError as exc:
        raise error(f"{source}: invalid YAML: nested too deeply (more than {MAX_DEPTH} levels)") from exc


def format_validation_error(source: str, exc: ValidationError, prefix: str = "") -> str:
    """One line per problem: ``source: key.path: message (got value)``; values are quoted in bounded size."""
    lines = []
    for err in exc.errors(include_url=False, include_context=False):
        key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + tuple(err["loc"])) or "<root>"
        got = err.get("input")
        got_text = "" if err["type"] == "missing" else f" (got {quote_value(got)})"
        lines.append(f"{source}: {key}: {err['msg']}{got_text}")
    return "\n".join(lines)


def model_from_mapping(data: dict[str, Any], model: type[M], source: str, prefix: str = "") -> M:
    """Validate a mapping into ``model``; ``source`` and ``prefix`` name it in errors."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc, prefix)) from exc


def load_model(path: str | Path | None, model: type[M], section: str | None = None) -> M:
    """Load ``model`` from a YAML file (optionally one top-level ``section`` of it).

    ``path=None`` gives the model's defaults; a missing section gives defaults too.
    """
    if path is None:
        return model()
    data = load_yaml(path)
    if section is not None:
        if section not in data:
            check_sections(data, path, known=KNOWN_SECTIONS | {section})
        sub = data.get(section, {})
        if sub is None:
            sub = {}
        if not isinstance(sub, dict):
            raise ConfigError(f"{path}: {section}: expected a mapping, got {type(sub).__name__}")
        return model_from_mapping(sub, model, str(path), section)
    return model_from_mapping(data, model, str(path))


def check_sections(data: dict[str, Any], path: str | Path, known: frozenset[str] | set[str] = KNOWN_SECTIONS) -> None:
    """Refuse top-level keys that are near misses of a known section (``confusionn`` for ``confusion``).

    Keys far from every known section are left to the model that reads the file (some files hold other
    programs' sections too); a near miss would otherwise silently fall back to defaults.
    """
    problems = []
    for key in data:
        if not isinstance(key, str):
            problems.append(f"{path}: top-level key {quote_value(key)} is not a section name")
            continue
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
        if close:
            problems.append(f"{path}: {key}: unknown section; did you mean '{close[0]}'?")
    if problems:
        raise ConfigError("\n".join(problems))
