"""Commands that change what the analysis assumes about the shell, or make bash evaluate text.

The analysis reads `~` as $HOME, `~+` as $PWD and follows `cd` by $PWD and $CDPATH; it trusts
that a command name is looked up on $PATH and that words split as written. A line that sets one of
those variables (an assignment, a `for` loop, `read`, `printf -v`, `declare`, …) moves the ground
under it, so it is not understood. Neither are the places where bash evaluates a *name* as
arithmetic, which runs any `$(…)` hidden in an array subscript, even one the line only holds as
quoted text: `test -v 'a[$(cmd)]'`, `printf -v 'a[$(cmd)]'`, `a[$i]=1`, `let`, `declare -i` and
name references (`declare -n`); nor the shell options that change `cd` or aliases.

Parameter expansions other than `$name`/`${name}` are judged where the word is read
(:mod:`fxdesk.domain.shell_words`), as they need the parsed word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fxdesk.domain.shell_programs import ASSIGNMENT

# What the analysis reads bash by: ~, ~+, cd, the program lookup, word splitting, `set -x`'s
# prompt (expanded, so it runs substitutions), and POSIX mode (aliases, special builtins).
SHELL_STATE = frozenset(
    {"PWD", "OLDPWD", "HOME", "IFS", "PATH", "CDPATH", "PS4", "POSIXLY_CORRECT", "BASH_CMDS",
     "BASH_ALIASES", "GLOBIGNORE", "EXECIGNORE"}
)  # fmt: skip
# Builtins that set (or look up) variables by name: the short options taking a value, those
# whose value is a variable name, and which operand is the first name (None: no operand is one).
_NAMERS: dict[str, tuple[str, str, int | None]] = {
    "read": ("adinNptu", "a", 0),
    "mapfile": ("dnOsuCc", "", 0),
    "readarray": ("dnOsuCc", "", 0),
    "getopts": ("", "", 1),
    "wait": ("p", "p", None),
    "unset": ("", "", 0),
    "compgen": ("AGWFCXPSoV", "V", None),
    "printf": ("v", "v", None),
    "declare": ("", "", 0),
    "typeset": ("", "", 0),
    "local": ("", "", 0),
    "export": ("", "", 0),
    "readonly": ("", "", 0),
}
_ATTRIBUTES = frozenset({"declare", "typeset", "local"})  # -n: name reference, -i: integer
_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SET_OPTIONS = frozenset({"physical", "keyword", "posix"})  # `cd -P` always, env anywhere, aliases
_SHOPT_OPTIONS = frozenset({"cdable_vars", "expand_aliases", "extdebug", "autocd"})
_WRAPPERS = frozenset({"builtin", "command"})


def assignment_trouble(word: str, *, before_command: bool) -> str:
    """Why an assignment word changes what the analysis assumed ("" when it does not).

    ``before_command``: it prefixes a command (`IFS= read -r x`), so it lasts for that command
    only; IFS then only splits expansions, which are already read as unknown.
    """
    match = ASSIGNMENT.match(word)
    if match is None:
        return ""
    name = _NAME.match(word)
    assert name is not None  # ASSIGNMENT starts with a name
    if match.group(1):
        return f"assigns to `{match.group(0)[:-1]}`, whose subscript bash evaluates as arithmetic"
    if name.group(0) in SHELL_STATE and not (before_command and name.group(0) == "IFS"):
        return f"sets {name.group(0)}, which changes how fxdesk reads the rest of the line"
    return ""


def loop_trouble(name: str) -> str:
    """Why a `for` loop over ``name`` changes what the analysis assumed."""
    if name in SHELL_STATE:
        return f"loops over {name}, which changes how fxdesk reads the rest of the line"
    return ""


def command_trouble(words: Sequence[str]) -> str:
    """Why this simple command (its words after quote removal, expansions as written) sets
    shell state the analysis relies on, or has bash evaluate a name as arithmetic ("" when it
    does neither)."""
    rest = list(words)
    leading = 0
    while leading < len(rest) and ASSIGNMENT.match(rest[leading]):
        leading += 1
    for word in rest[:leading]:
        why = assignment_trouble(word, before_command=leading < len(rest))
        if why:
            return why
    rest = rest[leading:]
    while len(rest) > 1 and rest[0] in _WRAPPERS:
        rest = rest[1:]
    if not rest:
        return ""
    name, texts = rest[0], rest[1:]
    if name == "let":
        return "evaluates arithmetic (`let`), which can run commands hidden in a name"
    if name == "set":
        return _set_trouble(texts)
    if name == "shopt":
        turned = _SHOPT_OPTIONS.intersection(texts)
        if turned or "-o" in texts:
            shown = ", ".join(sorted(turned)) or "-o"
            return f"changes shell options ({shown}) that decide where `cd` goes or what runs"
        return ""
    if name in ("test", "["):
        names = [texts[i + 1] for i, text in enumerate(texts[:-1]) if text in ("-v", "-R")]
        return _names_trouble(name, names)
    if name not in _NAMERS:
        return ""
    if name in _ATTRIBUTES:
        for text in texts:
            if text[:1] in "-+" and ("n" in text or "i" in text):
                return f"`{name} {text}` makes later assignments evaluate names or arithmetic"
    return _names_trouble(name, _named(texts, *_NAMERS[name]))


def _named(args: list[str], valued: str, naming: str, first: int | None) -> list[str]:
    """The words of a builtin's arguments that are variable names (or name=value)."""
    names: list[str] = []
    i = 0
    while i < len(args) and args[i][:1] in "-+" and args[i] not in ("-", "+"):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        for index, letter in enumerate(arg[1:]):
            if letter in valued:
                value = arg[index + 2 :] or (args[i] if i < len(args) else "")
                i += 0 if arg[index + 2 :] else 1
                if letter in naming:
                    names.append(value)
                break
    if first is not None:
        names += args[i + first :]
    return names


def _names_trouble(builtin: str, names: list[str]) -> str:
    for text in names:
        target = text.split("=", 1)[0].removesuffix("+")
        if _SUBSCRIPT.match(target):
            return f"`{builtin}` has bash evaluate the subscript of `{target}` as arithmetic"
        if re.search(r"[$`]", target):
            return f"`{builtin}` names a variable only known when it runs"
        if target in SHELL_STATE:
            return f"`{builtin}` changes {target}, which fxdesk reads the rest of the line by"
    return ""


def _set_trouble(args: list[str]) -> str:
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("-o", "+o") and index + 1 < len(args) and args[index + 1] in _SET_OPTIONS:
            return f"`set {arg} {args[index + 1]}` changes how bash runs the rest of the line"
        if arg[:1] in "-+" and arg not in ("-o", "+o") and set(arg[1:]) & set("Pk"):
            return f"`set {arg}` changes how bash runs the rest of the line"
    return ""
