"""The table of commands that need the network (``domain/network_commands.py``), read from
lines as the shell analysis gives them: behind wrappers, past git's global options, with
offline flags and local operands that need none."""

from __future__ import annotations

import pytest

from fxdesk.domain.network_commands import needs_network
from fxdesk.domain.shell import analyse


def need(line: str) -> list[str]:
    analysis = analyse(line, cwd="/work/proj", home="/home/u")
    assert analysis.understood, analysis.problems
    return [needs_network(command.words) for command in analysis.commands]


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("curl http://127.0.0.1:8000", "curl"),
        ("wget -q https://example.org/a.tgz", "wget"),
        ("/usr/bin/curl -s x", "curl"),
        ("sudo -u bob curl x", "curl"),
        ("timeout -s KILL 5 wget x", "wget"),
        ("env -u HOME FOO=1 nice -n 5 curl x", "curl"),
        ("git fetch origin", "git fetch"),
        ("git -C sub --no-pager pull --rebase", "git pull"),
        ("git -c user.name=x push origin main", "git push"),
        ("git clone https://example.org/r.git", "git clone"),
        ("git ls-remote origin", "git ls-remote"),
        ("git submodule update --init", "git submodule update"),
        ("git remote update", "git remote update"),
        ("pip install requests", "pip install"),
        ("pip3.11 download x", "pip download"),
        ("python3 -m pip install -r requirements.txt", "pip install"),
        ("uv pip install x", "uv pip install"),
        ("uv sync", "uv sync"),
        ("uvx ruff", "uvx"),
        ("poetry add httpx", "poetry add"),
        ("npm install", "npm install"),
        ("npm ci", "npm ci"),
        ("npm i -D vite", "npm i"),
        ("yarn", "yarn"),
        ("yarn add left-pad", "yarn add"),
        ("pnpm add x", "pnpm add"),
        ("npx create-vite", "npx"),
        ("cargo install ripgrep", "cargo install"),
        ("cargo +nightly fetch", "cargo fetch"),
        ("go get example.org/m@v1", "go get"),
        ("go mod download", "go mod download"),
        ("apt-get install -y jq", "apt-get install"),
        ("apt update", "apt update"),
        ("docker pull alpine", "docker pull"),
        ("gh pr list", "gh"),
        ("ssh host uptime", "ssh"),
        ("scp notes.txt me@host:/tmp/", "scp to another host"),
        ("rsync -a dist/ rsync://mirror/x", "rsync to another host"),
        ("http GET example.org", "http"),
        ("bundle", "bundle"),
    ],
)
def test_commands_that_need_the_network_are_named(line: str, named: str) -> None:
    assert need(line) == [named]


@pytest.mark.parametrize(
    "line",
    [
        "ls -la",
        "git status",
        "git -C sub log --oneline",
        "git commit -m fetch",  # the word is a message, not the subcommand
        "git remote -v",
        "pip list",
        "pip install --no-index --find-links dist x",
        "npm test",
        "npm run install-deps",
        "npm --offline ci",
        "cargo build",  # only what the cache lacks: left to the hint
        "cargo fetch --offline",
        "cargo update --frozen",
        "go build ./...",
        "uv run pytest",
        "docker build .",
        "rsync -a src/ backup/",
        "scp ./a:b backup/",
        "echo curl",
        "python3 -c 'print(1)'",
        "make",
    ],
)
def test_commands_that_do_not_need_it(line: str) -> None:
    assert need(line) == [""]


def test_each_part_of_a_line_is_read_on_its_own() -> None:
    assert need("npm test && git push; echo done | curl -d @- x") == ["", "git push", "", "curl"]
