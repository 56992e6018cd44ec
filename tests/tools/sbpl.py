"""A small reader and evaluator of Seatbelt profiles (SBPL), to test what a profile *means* on a
machine without ``sandbox-exec``.

It knows the subset fxdesk's profile uses, with Apple's documented meaning: ``(deny default)``
then ``allow`` rules; an operation name ending in ``*`` covers every operation it prefixes; the
filters of one rule are alternatives; ``subpath`` is a path and everything below it, ``literal``
exactly that path; ``require-all``/``-any``/``-not`` combine filters; ``(param "K")`` is the value
passed with ``-D K=…``. A filter it does not know raises, so a profile cannot pass by using
something this evaluator silently ignores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Regex:
    pattern: str


@dataclass(frozen=True)
class Symbol:
    name: str


Form = list[Any]
_TOKEN = re.compile(r'\s+|;[^\n]*|\(|\)|#"(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*"|[^\s()";]+')


def parse(text: str) -> list[Form]:
    """The top-level forms of ``text``; raises ValueError on unbalanced parentheses or stray
    text."""
    stack: list[Form] = [[]]
    position = 0
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None:
            raise ValueError(f"cannot read the profile at {position}: {text[position:][:20]!r}")
        token = found.group()
        position = found.end()
        if token.isspace() or token.startswith(";"):
            continue
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("a ')' without its '('")
            done = stack.pop()
            stack[-1].append(done)
        elif token.startswith('#"'):
            stack[-1].append(Regex(_unquote(token[1:])))
        elif token.startswith('"'):
            stack[-1].append(_unquote(token))
        else:
            stack[-1].append(Symbol(token))
    if len(stack) != 1:
        raise ValueError("a '(' without its ')'")
    return stack[0]


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


@dataclass
class Request:
    """One operation a process attempts, with what the filters look at.

    Attributes:
        operation: e.g. ``file-write-create``, ``network-outbound``, ``mach-lookup``.
        path: The file (file operations, unix sockets).
        facts: Other attributes: ``ip`` ("host:port"), ``side`` ("local" or "remote"),
            ``socket`` ("ip" or "unix-socket"), ``sysctl``, ``global-name``, ``target``,
            ``socket-domain``, ``ipc-name``.
    """

    operation: str
    path: str | None = None
    facts: dict[str, str] = field(default_factory=dict)


class Profile:
    """A parsed profile with its parameters, answering whether it allows a request."""

    def __init__(self, text: str, parameters: dict[str, str]) -> None:
        self.forms = parse(text)
        self.parameters = parameters
        heads = [form[:2] for form in self.forms]
        if [Symbol("deny"), Symbol("default")] not in heads:
            raise ValueError("the profile is not closed by default")
        for form in self.forms:
            if form[0] == Symbol("deny") and form[1:] != [Symbol("default")]:
                raise ValueError(f"a deny rule other than the default: {form}")

    def allows(self, operation: str, path: str | None = None, **facts: str) -> bool:
        request = Request(operation, path, {k.replace("_", "-"): v for k, v in facts.items()})
        return any(self._rule_allows(form, request) for form in self.forms)

    def _rule_allows(self, form: Form, request: Request) -> bool:
        if form[0] != Symbol("allow"):
            return False
        operations = [item.name for item in form[1:] if isinstance(item, Symbol)]
        filters = [item for item in form[1:] if isinstance(item, list)]
        if not any(_covers(name, request.operation) for name in operations):
            return False
        return not filters or any(self._matches(f, request) for f in filters)

    def _value(self, item: Any) -> Any:
        if isinstance(item, list) and item and item[0] == Symbol("param"):
            return self.parameters[item[1]]
        return item

    def _matches(self, form: Form, request: Request) -> bool:
        head = form[0].name
        args = [self._value(item) for item in form[1:]]
        if head == "require-all":
            return all(self._matches(f, request) for f in args)
        if head == "require-any":
            return any(self._matches(f, request) for f in args)
        if head == "require-not":
            return not self._matches(args[0], request)
        if head in ("literal", "path", "path-literal"):
            return request.path == args[0]
        if head == "subpath":
            root = args[0]
            path = request.path or ""
            return path == root or path.startswith(root.rstrip("/") + "/")
        if head == "regex":
            return request.path is not None and re.search(args[0].pattern, request.path) is not None
        if head in ("local", "remote"):
            if request.facts.get("side") != head or request.facts.get("socket") != args[0].name:
                return False
            if args[0].name == "ip":
                return _ip_matches(args[1], request.facts["ip"])
            return self._matches(args[1], request)
        simple = {
            "sysctl-name": ("sysctl", False),
            "sysctl-name-prefix": ("sysctl", True),
            "global-name": ("global-name", False),
            "ipc-posix-name-prefix": ("ipc-name", True),
            "target": ("target", False),
            "socket-domain": ("socket-domain", False),
        }
        if head not in simple:
            raise ValueError(f"a filter this evaluator does not know: {form}")
        fact, prefix = simple[head]
        wanted = args[0].name if isinstance(args[0], Symbol) else args[0]
        value = request.facts.get(fact)
        if value is None:
            return False
        return value.startswith(wanted) if prefix else value == wanted


def _covers(name: str, operation: str) -> bool:
    return operation == name or (name.endswith("*") and operation.startswith(name[:-1]))


_LOCALHOST = ("localhost", "127.0.0.1", "::1")


def _ip_matches(pattern: str, address: str) -> bool:
    want_host, _, want_port = pattern.rpartition(":")
    host, _, port = address.rpartition(":")
    host_ok = want_host == "*" or (want_host == "localhost" and host in _LOCALHOST)
    return host_ok and want_port in ("*", port)
