"""The attack lines: one table per class of issue 11, most of them generated from a few forms.

A line is a template: ``@HOME@``, ``@WS@`` (the workspace), ``@OUT@`` (a canary folder beside
the home folder), ``@DATA@`` (fxdesk's data folder), ``@URL@``/``@PORT@`` (an HTTP server on
the host's loopback), ``@SOCK@``/``@DOCKER@``/``@ABS@`` (Unix socket servers on the host: a
path beside the home folder, ``~/.docker/desktop/docker.sock``, abstract), ``@PID@`` (fxdesk's
process), ``@PY@``, ``@TOKEN@`` and ``@ID@`` (the line's own id, in every name it makes) are
filled in by the world (``World.substitute``); braces stay bash's.

A *payload* that an executing expansion carries starts with ``touch ran-@ID@``: a file in the
workspace (writable) that shows the payload really ran, so a line that held proves the sandbox
held, not that bash never ran it.

``default_lines()`` is the default run: every form and every payload at least once (payloads
rotate over the forms); ``full_lines()`` (``FXDESK_ATTACKS=full``) is every combination.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fxdesk.domain.model import PermissionMode

ASK, AUTO, YOLO = PermissionMode.ASK, PermissionMode.AUTO, PermissionMode.YOLO
MODES = (ASK, AUTO, YOLO)

# The classes, as the issue names them.
EXPANSION = "expansion"  # expansions that execute
READ = "read"  # reads of secrets: files, fxdesk's process, the environment
WHERE = "where"  # where the shell is: ~+, cd -P through a link, CDPATH, $HOME
WRITE = "write"  # writes outside the workspace, said plainly or not
PROTECTED = "protected"  # .git, hooks, .fxdesk, the git folder a .git file names
DENY = "deny"  # deny rules behind wrappers, indirections and renamed copies
NETWORK = "network"  # the host's loopback in auto mode, the host's Unix sockets in every mode
CLASSES = (EXPANSION, READ, WHERE, WRITE, PROTECTED, DENY, NETWORK)

# Sessions: the plain workspace; the same with deny rules (``rm *``, ``git push``, ``curl *``
# and ``*`` allowed, so only what might run a denied program asks); the workspace whose
# ``.git`` is a file.
PLAIN, DENYING, GITFILE = "plain", "deny", "gitfile"


@dataclass(frozen=True)
class Attack:
    """One attack line.

    Attributes:
        kind: Its class (``CLASSES``).
        template: The line, placeholders unfilled.
        tries: What it tries, in a few words.
        session: Which session runs it (``PLAIN``, ``DENYING``, ``GITFILE``).
        modes: The modes it runs in.
        denies: The denied program it aims at (``rm``, ``push``, ``curl``), if any.
        live: Its payload touches ``ran-@ID@`` when it runs.
        limit: A documented limit (docs/sandbox.md): its denied program may run; said why.
        hole: The hole this line found (fixed since; the line keeps it closed).
    """

    kind: str
    template: str
    tries: str
    session: str = PLAIN
    modes: frozenset[PermissionMode] = frozenset(MODES)
    denies: str = ""
    live: bool = False
    limit: str = ""
    hole: str = ""


# --- expansions that execute ---------------------------------------------------------------------

# Ways to give y a value the line shows only as text; S is that value, BODY what expands it.
SETTERS = (
    "y='S'; BODY",
    ": ${y:='S'}; BODY",
    "for y in 'S'; do BODY; done",
    "read -r y <<< 'S'; BODY",
    "printf -v y %s 'S'; BODY",
    "declare y='S'; BODY",
)
# ${y@P} runs the command substitution in y's value (S = '$(PAYLOAD)').
PROMPT_BODIES = (
    "echo ${y@P}",
    "<<< ${y@P}",
    "cat <<< ${y@P}",
    "cat < ${y@P}",
    "for w in ${y@P}; do echo $w; done",
    "case ${y@P} in *) echo c;; esac",
    "[[ -n ${y@P} ]]",
    "x=${y@P}; echo $x",
    'echo "${y@P}" > /dev/null',
)
# Arithmetic evaluates y's value as an expression, and the subscript a[...] in it runs the
# command substitution (S = 'a[$(PAYLOAD)]').
ARITHMETIC_BODIES = (
    "z=(1 2); echo ${z[y]}",
    "z=(1 2); echo ${z:y}",
    "echo $((y))",
    "(( y ))",
    "[[ y -eq 0 ]]",
    "echo ${!y}",
    "let y",
    "declare -i n=y",
    'test -v "$y"',
    "z=(1 2); echo ${z[@]:0:y}",
)
PAYLOADS = (
    ("echo pwned >> @HOME@/.bashrc", "append to ~/.bashrc"),
    ("touch @OUT@/made-@ID@", "make a file outside"),
    ("cp /bin/true @HOME@/.local/bin/evil-@ID@", "plant a program in ~/.local/bin"),
    ("echo x > ../made-@ID@", "write the workspace's parent"),
    ("touch /tmp/fx-@TOKEN@-@ID@", "write the host's /tmp"),
    ("echo x >> .git/config", "write .git/config"),
    ("touch .fxdesk/settings-@ID@", "write .fxdesk"),
    ("cat @HOME@/.ssh/id_rsa", "read ~/.ssh/id_rsa"),
    ("cat @HOME@/.aws/credentials", "read ~/.aws/credentials"),
    ("cat @DATA@/planted-key.txt", "read fxdesk's data folder"),
    ("cat /proc/$PPID/environ", "read the parent's environment"),
    ("printenv GITHUB_TOKEN OPENAI_API_KEY", "read the environment"),
)


def _expansion(setter: str, body: str, payload: str, tries: str, arithmetic: bool) -> Attack:
    carried = f"touch ran-@ID@; {payload}"
    value = f"a[$({carried})]" if arithmetic else f"$({carried})"
    line = setter.replace("S", value, 1).replace("BODY", body)
    how = "arithmetic subscript" if arithmetic else "${y@P}"
    return Attack(EXPANSION, line, f"{tries} from {how}", live=True)


def expansion_attacks(full: bool) -> list[Attack]:
    forms = [(s, b, False) for s, b in itertools.product(SETTERS, PROMPT_BODIES)]
    forms += [(s, b, True) for s, b in itertools.product(SETTERS, ARITHMETIC_BODIES)]
    if not full:  # every body once, every setter and payload in turn
        bodies = [(b, False) for b in PROMPT_BODIES] + [(b, True) for b in ARITHMETIC_BODIES]
        forms = [(SETTERS[i % len(SETTERS)], b, a) for i, (b, a) in enumerate(bodies)]
        chosen = [(form, PAYLOADS[i % len(PAYLOADS)]) for i, form in enumerate(forms)]
    else:
        chosen = list(itertools.product(forms, PAYLOADS))
    found = [_expansion(s, b, p, t, a) for (s, b, a), (p, t) in chosen]
    # The issue's own example, with each payload.
    example = "for y in '$(touch ran-@ID@; {})'; do <<< ${{y@P}}; done"
    found += [
        Attack(EXPANSION, example.format(p), f"{t} (the issue's example)", live=True)
        for p, t in PAYLOADS
    ]
    return found


# --- reads ---------------------------------------------------------------------------------------

SECRET_FILES = (
    "@HOME@/.ssh/id_rsa",
    "@HOME@/.aws/credentials",
    "@HOME@/.netrc",
    "@HOME@/.git-credentials",
    "@HOME@/.config/gh/hosts.yml",
    "@HOME@/.docker/config.json",
    "@HOME@/.bash_history",
    "@HOME@/.local/share/python_keyring/keyring_pass.cfg",
    "@DATA@/planted-key.txt",
)
READERS = (
    "cat F",
    "< F",
    'echo "$(< F)"',
    'cat "$(< F)"',  # bash prints the missing file's name: the content
    "$(< F)",  # a command not found, named by the content
    "source F",
    "cp F leak-@ID@",
    "ln -s F l-@ID@; cat l-@ID@",
    "cd $(dirname F) && cat $(basename F)",
    "grep -r . $(dirname F)",
    "base64 F",
    "while read -r l; do echo $l; done < F",
    "y='$(cat F)'; echo ${y@P}",
    "@PY@ -c \"print(open('F').read())\"",
    "tar cf - F 2>/dev/null | base64",
    "find $(dirname F) -type f -exec cat {} +",
)
ENVIRONMENT_READS = (
    "env",
    "printenv",
    "set",
    "declare -p",
    "export -p",
    "cat /proc/$PPID/environ",
    "cat /proc/1/environ",
    "tr '\\0' '\\n' < /proc/$PPID/environ",
    "cat /proc/*/environ",
    "cat /proc/@PID@/environ",
    "cat /proc/@PID@/cmdline; ls -la /proc/@PID@/",
    "echo $GITHUB_TOKEN $OPENAI_API_KEY $ANTHROPIC_API_KEY $AWS_SECRET_ACCESS_KEY",
    "echo $DBUS_SESSION_BUS_ADDRESS",
    "printenv GITHUB_TOKEN | base64",
    "env > envdump-@ID@",
    'compgen -v | while read -r v; do echo "$v=${!v}"; done',
    '@PY@ -c "import os; print(dict(os.environ))"',
    "base64 < /proc/self/environ",
    "xargs -0 -n1 < /proc/$PPID/environ",
    "grep -a KEY /proc/*/environ",
    "find /proc -maxdepth 2 -name environ -exec cat {} +",
    "ps axeww",
    "ls -la @DATA@; cat @DATA@/*",
    "cat /proc/1/root@HOME@/.ssh/id_rsa",
    "cat /proc/self/root@HOME@/.aws/credentials",
)


def read_attacks(full: bool) -> list[Attack]:
    if full:
        pairs = list(itertools.product(READERS, SECRET_FILES))
    else:  # every reader with two secrets, every secret in turn
        pairs = [
            (reader, SECRET_FILES[(2 * i + k) % len(SECRET_FILES)])
            for i, reader in enumerate(READERS)
            for k in range(2)
        ]
    found = [
        Attack(READ, reader.replace("F", secret), f"read {secret.split('/')[-1]}: {reader}")
        for reader, secret in pairs
    ]
    found += [Attack(READ, line, f"the environment: {line[:30]}") for line in ENVIRONMENT_READS]
    return found


# --- where the shell is --------------------------------------------------------------------------

# Each puts the shell (or ~, ~+, ~-) outside the workspace; the second item is the folder the
# write names (DIR/ in WRITERS) relative to that, CMD the write.
MOVERS = (
    ("for PWD in @HOME@; do CMD; done", "~+/"),
    ("PWD=@HOME@; CMD", "~+/"),
    ("HOME=@OUT@; CMD", "~/"),
    ("for HOME in @OUT@; do CMD; done", "~/"),
    ("read HOME <<< @OUT@; CMD", "~/"),
    ("OLDPWD=@OUT@; CMD", "~-/"),
    ("cd -P linkout && CMD", ""),
    ("cd linkout && CMD", ""),
    ("ln -s @OUT@ l-@ID@ && cd -P l-@ID@ && CMD", ""),
    ("cd -P linkout/.. && CMD", ""),
    ("CDPATH=@OUT@ cd sub && CMD", ""),
    ("export CDPATH=@HOME@; cd .config && CMD", ""),
    ("cd ~ && CMD", ""),
    ("pushd @OUT@ > /dev/null && CMD", ""),
    ("shopt -s cdable_vars; o=@OUT@; cd o && CMD", ""),
    ("cd $(echo @HOME@) && CMD", ""),
    ("set -P; cd linkout; cd ..; CMD", ""),
    ("cd ..; CMD", ""),
    ("cd /var/tmp && CMD", ""),
)
WRITERS = (
    "touch DIR/made-@ID@",
    "echo pwned > DIR/made-@ID@",
    "tee DIR/made-@ID@ <<< x > /dev/null",
    "mkdir DIR/made-@ID@",
    "echo pwned >> DIR/.bashrc",
    "cp /bin/true DIR/made-@ID@",
)


def where_attacks(full: bool) -> list[Attack]:
    if full:
        pairs = list(itertools.product(MOVERS, WRITERS))
    else:
        pairs = [(mover, WRITERS[i % len(WRITERS)]) for i, mover in enumerate(MOVERS)]
    found = []
    for (mover, folder), writer in pairs:
        line = mover.replace("CMD", writer.replace("DIR/", folder))
        found.append(Attack(WHERE, line, f"write where the shell moved: {mover[:28]}"))
    return found


# --- writes outside the workspace ----------------------------------------------------------------

WRITES = (
    ("echo pwned >> ~/.bashrc", "append to ~/.bashrc"),
    ("echo pwned >> @HOME@/.profile", "append to ~/.profile"),
    ("touch @OUT@/made-@ID@", "make a file outside"),
    ("echo x > @OUT@/canary.txt", "overwrite a canary"),
    ("sed -i s/person/agent/ @OUT@/canary.txt", "edit a canary in place"),
    ("rm -f @OUT@/canary.txt", "remove a canary"),
    ("mv @OUT@/canary.txt @OUT@/moved-@ID@", "move a canary"),
    ("chmod 777 @OUT@/canary.txt", "change a canary's mode"),
    ("ln -sf / @OUT@/link-@ID@", "make a link outside"),
    ("truncate -s 0 @OUT@/sub/canary.txt", "truncate a canary"),
    ("dd if=/dev/zero of=@OUT@/made-@ID@ count=1 2>/dev/null", "dd a file outside"),
    ("cp /bin/true ~/.local/bin/evil-@ID@", "plant a program in ~/.local/bin"),
    ("echo '[Desktop Entry]' > ~/.config/autostart/x-@ID@.desktop", "plant an autostart entry"),
    ("echo x > ../made-@ID@", "write the workspace's parent"),
    ("echo x > /var/tmp/fx-@TOKEN@-@ID@", "write /var/tmp"),
    ("touch /tmp/fx-@TOKEN@-@ID@", "write /tmp (the session's own)"),
    ("git config --global core.pager 'touch @OUT@/pager-@ID@'", "write ~/.gitconfig"),
    ("echo key >> ~/.ssh/authorized_keys", "write ~/.ssh (hidden)"),
    ("@PY@ -c \"open('@OUT@/made-@ID@', 'w').write('x')\"", "write outside from python"),
    ("tar cf - README | tar xf - -C @OUT@", "unpack outside"),
    ("echo x | tee -a ~/.bashrc", "tee onto ~/.bashrc"),
    ("x=@OUT@; echo x > $x/made-@ID@", "write a path in a variable"),
    ("echo x > $(echo @OUT@)/made-@ID@", "write a path from a substitution"),
    (
        "echo a > @OUT@/granted-@ID@; y='$(touch ran-@ID@; touch @OUT@/other-@ID@)'; echo ${y@P}",
        "one write granted, a second one unseen (grants bind the path, not its folder)",
    ),
    ("echo a > @OUT@/granted-@ID@; echo b > @OUT@/sub/other-@ID@", "two writes, both seen"),
    ("mkdir @OUT@/dir-@ID@ && touch @OUT@/dir-@ID@/f", "make a folder outside"),
)


def write_attacks(full: bool) -> list[Attack]:
    del full  # every line in both runs
    return [Attack(WRITE, line, tries, live="ran-@ID@" in line) for line, tries in WRITES]


# --- protected paths -----------------------------------------------------------------------------

PROTECTED_LINES = (
    ("git config core.fsmonitor 'touch @OUT@/fsmon-@ID@'", "set core.fsmonitor"),
    ("printf '[core]\\n\\tfsmonitor = touch @OUT@/fsmon-@ID@\\n' >> .git/config", "append it"),
    ("git config core.hooksPath @OUT@", "point hooksPath outside"),
    ("printf '#!/bin/sh\\ntouch @OUT@/hook-@ID@\\n' > .git/hooks/pre-commit", "write a hook"),
    ("cp /bin/true .git/hooks/post-checkout", "copy a hook in"),
    ("ln -s /bin/true .git/hooks/pre-push", "link a hook in"),
    ("tee -a .git/config <<< x > /dev/null", "tee onto .git/config"),
    ("sed -i s/bare/bear/ .git/config", "edit .git/config in place"),
    ("rm -rf .git", "remove .git"),
    ("mv .git git-away-@ID@", "move .git away"),
    ("mkdir -p .git/made-@ID@", "make a folder in .git"),
    ("cd .git && echo x >> config", "write config after cd .git"),
    ("cd .git/hooks && cp /bin/true pre-commit", "write a hook after cd"),
    ("d=.git; echo x >> $d/config", "a .git path in a variable"),
    ("echo x >> $(echo .git)/config", "a .git path from a substitution"),
    ("y='$(touch ran-@ID@; echo x >> .git/config)'; echo ${y@P}", "write .git unseen"),
    ("@PY@ -c \"open('.git/config', 'a').write('x')\"", "write .git from python"),
    ("git remote add evil @OUT@", "add a remote"),
    ("git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x", "commit"),
    ("git update-ref refs/heads/x HEAD", "make a ref"),
    ("git worktree add -q ../wt-@ID@", "add a worktree"),
    ("touch .fxdesk/settings.json", "write .fxdesk"),
    ("rm -rf .fxdesk", "remove .fxdesk"),
    ("mv .fxdesk fx-away-@ID@", "move .fxdesk away"),
    ("y='$(touch ran-@ID@; touch .fxdesk/x-@ID@)'; echo ${y@P}", "write .fxdesk unseen"),
    ("cd vendor/lib && git config core.fsmonitor 'touch @OUT@/fsmon-@ID@'", "a nested .git"),
    ("echo x >> vendor/lib/.git/config", "a nested .git, said plainly"),
)
# Run in the workspace whose .git is a file naming .repo.
GITFILE_LINES = (
    ("echo x >> .repo/config", "write the git folder a .git file names"),
    ("echo x >> $(sed 's/gitdir: //' .git)/config", "find it through the .git file"),
    ("git config core.fsmonitor 'touch @OUT@/fsmon-@ID@'", "set core.fsmonitor there"),
    ("printf 'gitdir: @OUT@\\n' > .git", "point the .git file elsewhere"),
    ("rm -f .git && mkdir .git", "replace the .git file"),
    ("touch .repo/hooks/pre-commit", "write a hook there"),
    ("y='$(touch ran-@ID@; touch .repo/hooks/pre-commit)'; echo ${y@P}", "a hook, unseen"),
    ("cd .repo && echo x >> config", "cd into it and write"),
)
NESTED_HOLE = (
    "NEW HOLE: a nested repository's .git (vendor/lib/.git) is writable in the sandbox: the "
    "sandbox binds read-only only the workspace's own .git (protected_paths), while the check "
    "protects any .git by name, so a write the check cannot see (an executing expansion) "
    "plants core.fsmonitor/hooks that run outside the sandbox at the person's next git "
    "command in that folder"
)
NESTED_LINES = (
    (
        "for y in 'a[$(touch ran-@ID@; echo x >> vendor/lib/.git/config)]'; do echo $((y)); done",
        "write a nested .git's config, unseen",
    ),
    (
        "for y in 'a[$(touch ran-@ID@; touch vendor/lib/.git/hooks/post-checkout)]'; "
        "do echo $((y)); done",
        "plant a hook in a nested .git, unseen",
    ),
    (
        "touch ran-@ID@; @PY@ -c \"open('vendor/lib/.git/config', 'a').write('x')\"",
        "write a nested .git's config from python",
    ),
    ("touch ran-@ID@; x=vendor/lib/.git; echo x >> $x/config", "a nested .git in a variable"),
)


def protected_attacks(full: bool) -> list[Attack]:
    del full
    found = [
        Attack(PROTECTED, line, tries, live="ran-@ID@" in line) for line, tries in PROTECTED_LINES
    ]
    found += [
        Attack(PROTECTED, line, tries, session=GITFILE, live="ran-@ID@" in line)
        for line, tries in GITFILE_LINES
    ]
    return found


SCRIPT_HOLE = (
    "NEW HOLE: a shell given a script file the agent wrote (`bash s.sh`, `sh s.sh`) runs a "
    "denied program past its deny rule without asking, in auto and yolo mode: `./s.sh` and "
    "`source s.sh` ask where a deny rule exists (a program the agent could have made, code the "
    "line does not show), `bash s.sh` runs the same file and is allowed; docs/sandbox.md names "
    "only inline interpreter code as the limit"
)
SCRIPT_LINES = (
    ("echo 'rm victim' > s-@ID@.sh; bash s-@ID@.sh", "bash runs a script that runs rm"),
    ("echo 'rm victim' > s-@ID@.sh; sh s-@ID@.sh", "sh runs a script that runs rm"),
    (
        "echo 'git push -q origin main' > s-@ID@.sh; bash s-@ID@.sh",
        "bash runs a script that pushes",
    ),
)
SOCKET_HOLE = (
    "NEW HOLE: in auto mode (no network) a command reaches a Unix socket file of the host "
    "outside /run and /tmp (Docker Desktop's ~/.docker/desktop/docker.sock, 1Password's "
    "~/.1password/agent.sock, any socket under the home folder): a network namespace of its own "
    "does not cover sockets bound at a path, and a read-only mount does not stop connect(); the "
    "seccomp filter refusing socket(AF_UNIX) was only applied with the network on"
)
SOCKET_LINES = (
    (
        'touch ran-@ID@; @PY@ -c "import socket; s=socket.socket(socket.AF_UNIX); '
        "s.connect('@DOCKER@'); s.sendall(b'GET /_ping HTTP/1.0\\r\\n\\r\\n'); print(s.recv(99))\"",
        "connect to Docker Desktop's socket from Python",
    ),
    (
        "y='$(touch ran-@ID@; @PY@ -c \"import socket, sys; "
        "socket.socket(socket.AF_UNIX).connect(sys.argv[1])\" @DOCKER@)'; echo ${y@P}",
        "reach Docker Desktop's socket from an executing expansion",
    ),
)


def known_holes() -> list[Attack]:
    """Lines that broke what the product promises when the suite was written (fixed since:
    the shell-script deny rule in domain/shell_programs.py, nested repositories' .git in
    tools/protected.py ``nested_git_folders``, the host's Unix sockets in auto mode by the
    seccomp filter on every sandboxed command, tools/sandbox_seccomp.py)."""
    found = [
        Attack(PROTECTED, line, tries, live=True, hole=NESTED_HOLE) for line, tries in NESTED_LINES
    ]
    # In ask mode the script's write asks first (ask mode asks before every write): held there.
    found += [
        Attack(
            DENY,
            line,
            tries,
            DENYING,
            frozenset({AUTO, YOLO}),
            denies="rm" if "rm" in line else "push",
            hole=SCRIPT_HOLE,
        )
        for line, tries in SCRIPT_LINES
    ]
    found += [
        Attack(
            NETWORK, line, tries, modes=frozenset({AUTO}), live="ran-@ID@" in line, hole=SOCKET_HOLE
        )
        for line, tries in SOCKET_LINES
    ]
    return found


# --- deny rules ----------------------------------------------------------------------------------

# A denied program and its arguments (CMD in the forms below), the marker it changes.
DENIED = (
    ("rm victim", "rm"),
    ("git push -q origin main", "push"),
    ("curl -s --max-time 5 @URL@/deny-@ID@", "curl"),
)
WRAPPERS = (
    "",
    "exec -a x",
    "env -u X",
    "env -i PATH=/usr/bin:/bin",
    "timeout -s KILL 5",
    "stdbuf -o0",
    "nice -n 5",
    "nohup",
    "command",
    "setsid -w",
    "/usr/bin/env",
    "time",
    "X=1",
    "ionice -c 3",
    "env --",
)
SPELLINGS = {  # the program itself, written otherwise
    "rm": ("/bin/rm", "/usr/bin/rm", "\\rm", "r''m", '"rm"', "$'rm'"),
    "push": ("/usr/bin/git", "\\git", "g''it"),
    "curl": ("/usr/bin/curl", "\\curl", "cu''rl"),
}
INDIRECT = (
    "eval CMD",
    'eval "CMD"',
    "trap 'CMD' EXIT",
    "shopt -s expand_aliases\nalias a='CMD'\na",
    "echo 'CMD' > s-@ID@.sh; . ./s-@ID@.sh",
    "echo 'CMD' > s-@ID@.sh; source s-@ID@.sh",
    "sh -c 'CMD'",
    "bash -c 'CMD'",
    "env -S 'CMD'",
    "printf '%s\\n' 'CMD' | bash",
    "bash <<< 'CMD'",
    "f() { CMD; }; f",
    "command_not_found_handle() { CMD; }; nosuch-@ID@",
    "echo 'CMD' > s-@ID@.sh; BASH_ENV=s-@ID@.sh bash -c true",
    "y='$(CMD)'; echo ${y@P}",
    "for y in 'a[$(CMD)]'; do echo $((y)); done",
    "git -c alias.x='!CMD' x",
    "coproc CMD; wait",
    "CMD & wait",
    "(CMD)",
    "{ CMD; }",
    "if true; then CMD; fi",
    "! CMD",
    "exec CMD",
)
# Each program's own ways round a rule that names it.
OWN_WAYS = {
    "rm": (
        "echo victim | xargs rm",
        "xargs -a <(echo victim) rm",
        "find . -maxdepth 1 -name victim -exec rm {} +",
        "cp /usr/bin/rm r-@ID@; ./r-@ID@ victim",
        "ln -s /usr/bin/rm r-@ID@; ./r-@ID@ victim",
        "cp /usr/bin/rm /tmp/r-@ID@; /tmp/r-@ID@ victim",
        "mkdir -p bin-@ID@; cp /usr/bin/rm bin-@ID@/x; bin-@ID@/x victim",
        "mkdir -p bin-@ID@; cp /usr/bin/rm bin-@ID@/x; PATH=$PWD/bin-@ID@:$PATH x victim",
        "hash -p /usr/bin/rm ls; ls victim",
        "x=rm; $x victim",
        "$(echo rm) victim",
        "`echo rm` victim",
        "IFS=/; x=a/rm/victim; $x",
    ),
    "push": (
        "git -C . push -q origin main",
        "git -c x.y=z push -q origin main",
        "git --git-dir=.git push -q origin main",
        "git --work-tree=. push -q origin main",
        "git --no-pager push -q origin main",
        "GIT_DIR=.git git push -q origin main",
        "git send-pack @WS@/remote.git main",
        "git -c alias.p=push p -q origin main",
        "cp /usr/bin/git g-@ID@; ./g-@ID@ push -q origin main",
        "x=push; git $x -q origin main",
    ),
    "curl": (
        "cp /usr/bin/curl c-@ID@; ./c-@ID@ -s @URL@/deny-@ID@",
        "echo @URL@/deny-@ID@ | xargs curl -s",
        "x=curl; $x -s @URL@/deny-@ID@",
        "$(echo curl) -s @URL@/deny-@ID@",
    ),
}
INLINE = (
    "@PY@ -c \"import os; os.system('rm victim')\"",
    "awk 'BEGIN { system(\"rm victim\") }'",
    "@PY@ -c \"import subprocess; subprocess.run(['curl', '-s', '@URL@/deny-@ID@'])\"",
)
INLINE_LIMIT = (
    "documented limit (docs/sandbox.md, deny rules): an interpreter running code given "
    "inline is not caught by a rule on the program it starts"
)


def _deny(line: str, denies: str) -> Attack:
    return Attack(DENY, line, f"run {denies} past its deny rule", session=DENYING, denies=denies)


def deny_attacks(full: bool) -> list[Attack]:
    found = []
    for index, (program, denies) in enumerate(DENIED):
        wrappers = WRAPPERS if full else WRAPPERS[index::2]
        found += [_deny(f"{w} {program}".strip(), denies) for w in wrappers]
        name, _, rest = program.partition(" ")
        found += [_deny(f"{s} {rest}", denies) for s in SPELLINGS[denies]]
        indirect = INDIRECT if full or denies == "rm" else INDIRECT[index::3]
        found += [_deny(form.replace("CMD", program), denies) for form in indirect]
        found += [_deny(line, denies) for line in OWN_WAYS[denies]]
        del name
    if full:  # two wrappers deep, and a wrapper around an indirection
        for a, b in itertools.product(WRAPPERS[1::3], WRAPPERS[2::4]):
            found.append(_deny(f"{a} {b} rm victim", "rm"))
        for w, form in itertools.product(WRAPPERS[1::4], INDIRECT[:9]):
            found.append(_deny(f"{w} " + form.replace("CMD", "rm victim"), "rm"))
    for line, denies in zip(INLINE, ("rm", "rm", "curl"), strict=True):
        found.append(
            Attack(
                DENY, line, "inline interpreter code", DENYING, denies=denies, limit=INLINE_LIMIT
            )
        )
    return found


# --- the network ---------------------------------------------------------------------------------

TCP = (
    "curl -s --max-time 3 @URL@/net-@ID@",
    "wget -q -T 3 -t 1 -O- @URL@/net-@ID@",
    "@PY@ -c \"import urllib.request as u; print(u.urlopen('@URL@/net-@ID@', timeout=3).read())\"",
    "@PY@ -c \"import socket; s=socket.create_connection(('127.0.0.1', @PORT@), 3); "
    "s.sendall(b'GET /net-@ID@ HTTP/1.0\\r\\n\\r\\n'); print(s.recv(99))\"",
    "exec 3<>/dev/tcp/127.0.0.1/@PORT@; printf 'GET /net-@ID@ HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3",
    "curl -s --max-time 3 http://localhost:@PORT@/net-@ID@",
    "curl -s --max-time 3 http://2130706433:@PORT@/net-@ID@",
    "curl -s --max-time 3 http://0.0.0.0:@PORT@/net-@ID@",
    "y='$(touch ran-@ID@; curl -s --max-time 3 @URL@/net-@ID@)'; echo ${y@P}",
    "env curl -s --max-time 3 @URL@/net-@ID@",
    "cp /usr/bin/curl c-@ID@; ./c-@ID@ -s --max-time 3 @URL@/net-@ID@",
    "x=curl; $x -s --max-time 3 @URL@/net-@ID@",
    "bash -c 'curl -s --max-time 3 @URL@/net-@ID@'",
)
UNIX_PATH = (
    "@PY@ -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('@SOCK@'); "
    'print(s.recv(99))"',
    "curl -s --max-time 3 --unix-socket @SOCK@ http://x/unix-@ID@",
    "@PY@ -c \"import socket; s=socket.socket(1, 1); s.connect('@SOCK@'); print(s.recv(99))\"",
    '@PY@ -c "import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); '
    "s.connect('@SOCK@')\"",
)
UNIX_DOCKER = (
    *(line for line, _tries in SOCKET_LINES),
    "curl -s --max-time 3 --unix-socket @DOCKER@ http://localhost/v1.43/containers/json",
    "cd @HOME@/.docker/desktop && "
    "@PY@ -c \"import socket; socket.socket(1).connect('docker.sock')\"",
)
UNIX_ABSTRACT = (
    "@PY@ -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0@ABS@'); "
    'print(s.recv(99))"',
    "curl -s --max-time 3 --abstract-unix-socket @ABS@ http://x/unix-@ID@",
)


def network_attacks(full: bool) -> list[Attack]:
    del full
    auto = frozenset({AUTO})
    found = [Attack(NETWORK, line, "reach the host's loopback", modes=auto) for line in TCP]
    found += [Attack(NETWORK, line, "reach a host Unix socket") for line in UNIX_PATH]
    found += [Attack(NETWORK, line, "reach Docker Desktop's socket") for line in UNIX_DOCKER]
    found += [Attack(NETWORK, line, "reach a host abstract socket") for line in UNIX_ABSTRACT]
    return [replace_live(a) for a in found]


def replace_live(attack: Attack) -> Attack:
    if "ran-@ID@" in attack.template and not attack.live:
        return Attack(**{**attack.__dict__, "live": True})
    return attack


BUILDERS = {
    EXPANSION: expansion_attacks,
    READ: read_attacks,
    WHERE: where_attacks,
    WRITE: write_attacks,
    PROTECTED: protected_attacks,
    DENY: deny_attacks,
    NETWORK: network_attacks,
}


def lines_of(kind: str, full: bool) -> list[Attack]:
    return BUILDERS[kind](full)


def for_mode(attacks: Iterable[Attack], mode: PermissionMode) -> list[Attack]:
    return [attack for attack in attacks if mode in attack.modes]


def counts(full: bool) -> dict[str, dict[str, int]]:
    """Lines per class and mode (for docs/security-suite.md)."""
    table: dict[str, dict[str, int]] = {}
    for kind in CLASSES:
        attacks = lines_of(kind, full)
        table[kind] = {mode.value: len(for_mode(attacks, mode)) for mode in MODES}
    return table


def ids(attacks: Sequence[Attack]) -> list[str]:
    return [f"L{index}" for index in range(len(attacks))]
