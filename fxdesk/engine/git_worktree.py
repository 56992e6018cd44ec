"""The git commands behind a session's worktree, run as plain ``git`` with explicit argv.

Every function blocks (call it in a worker thread) and raises ``WorktreeError`` with git's own
words when git refuses. ``git -C`` names the folder each time: nothing depends on the process's
current directory. These run outside the sandbox, for the person's own actions (Commit, Merge,
Create a patch, Discard), never for the agent.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from fxdesk.domain.worktrees import MergeResult, Worktree, WorktreeStatus
from fxdesk.engine.errors import WorktreeError

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 120.0
SQUASH = "squash"
FAST_FORWARD = "fast-forward"


def git(
    folder: str | os.PathLike[str],
    *args: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``git -C folder args…`` (``stdin``: text to feed it); raises ``WorktreeError`` with
    git's stderr when it fails and ``check`` (or when git cannot be run at all). Output that
    is not UTF-8 (a binary file's diff) is decoded with replacement characters."""
    argv = ["git", "-C", os.fspath(folder), *args]
    environ = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            env=environ,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise WorktreeError("git is not installed (or not on PATH); install git first") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(
            f"git {args[0]} took over {GIT_TIMEOUT_S:.0f} s and was stopped"
        ) from None
    log.debug("git %s in %s: exit %d", args[0], folder, done.returncode)
    if check and done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").strip()
        raise WorktreeError(f"git {args[0]} failed: {said}")
    return done


def out(folder: str | os.PathLike[str], *args: str) -> str:
    return git(folder, *args).stdout.strip()


def find_repository(folder: Path) -> tuple[Path, str, str]:
    """(the repository's top folder, ``folder``'s place inside it, the HEAD commit).

    Raises:
        WorktreeError: ``folder`` is not in a git repository, or the repository has no commit.
    """
    done = git(folder, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise WorktreeError(
            f"{folder} is not in a git repository, so a session there cannot have a worktree "
            "(run `git init` and make a first commit, or start the session without one)"
        )
    top = Path(os.path.realpath(done.stdout.strip()))
    head = git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if head.returncode != 0 or not head.stdout.strip():
        raise WorktreeError(
            f"the git repository {top} has no commits yet, so there is nothing to branch from: "
            "make a first commit, then start the session"
        )
    subdir = os.path.relpath(os.path.realpath(folder), top)
    return top, "" if subdir == "." else subdir, head.stdout.strip()


def create(top: Path, path: Path, branch: str, base: str, subdir: str = "") -> Worktree:
    """A new branch ``branch`` at ``base``, checked out in ``path`` (its parent is made)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    git(top, "worktree", "add", "-b", branch, str(path), base)
    real = Path(os.path.realpath(path))
    return Worktree(str(real), branch, base, str(top), subdir)


def status(worktree: Worktree) -> WorktreeStatus:
    """What the worktree holds now (``exists`` False, and nothing else, when it is gone)."""
    if not Path(worktree.path).is_dir():
        return WorktreeStatus(worktree, exists=False)
    head = out(worktree.path, "rev-parse", "HEAD")
    ahead = int(out(worktree.path, "rev-list", "--count", f"{worktree.base}..HEAD") or 0)
    changed = git(
        worktree.path, "status", "--porcelain", "--untracked-files=all", env=_NO_LOCKS
    ).stdout.splitlines()
    target = git(worktree.repository, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return WorktreeStatus(
        worktree,
        exists=True,
        head=head,
        ahead=ahead,
        changed=tuple(line for line in changed if line.strip()),
        target=target.stdout.strip() if target.returncode == 0 else "",
    )


_NO_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}  # status reads; it must not take the index lock


def commit(worktree: Worktree, message: str) -> str:
    """Stage everything in the worktree (new files too, .gitignore obeyed) and commit it on its
    branch; the new commit."""
    _exists(worktree)
    if not message.strip():
        raise WorktreeError("the commit message is empty")
    git(worktree.path, "add", "--all")
    if git(worktree.path, "diff", "--cached", "--quiet", check=False).returncode == 0:
        raise WorktreeError("nothing to commit: the worktree has no changes")
    git(worktree.path, "commit", "--quiet", "-m", message)
    return out(worktree.path, "rev-parse", "HEAD")


def merge(worktree: Worktree, how: str, message: str = "") -> MergeResult:
    """Bring the branch's commits into the branch the main checkout has out: by fast-forward,
    or as one squashed commit. The worktree's branch then stands at that commit, the new base.

    Refused: uncommitted changes in the worktree (commit them first), nothing to merge, a main
    checkout with changes of its own or on no branch, a fast-forward its branch has moved
    past. A squash that conflicts is undone in the main checkout.
    """
    if how not in (FAST_FORWARD, SQUASH):
        raise WorktreeError(f"merge how? {how!r} (fast-forward or squash)")
    now = status(worktree)
    _exists(worktree)
    if now.dirty:
        raise WorktreeError(
            "the worktree has uncommitted changes; commit them first (only commits are merged)"
        )
    if now.ahead == 0:
        raise WorktreeError(f"nothing to merge: {worktree.branch} has no commits since its base")
    main = worktree.repository
    if not now.target:
        raise WorktreeError(f"the main checkout {main} is on no branch (detached HEAD)")
    own = git(main, "status", "--porcelain", "--untracked-files=no", env=_NO_LOCKS).stdout
    if own.strip():
        raise WorktreeError(
            f"the main checkout {main} has uncommitted changes; commit or stash them there "
            "first, then merge"
        )
    if how == FAST_FORWARD:
        done = git(main, "merge", "--ff-only", "--quiet", worktree.branch, check=False)
        if done.returncode != 0:
            raise WorktreeError(
                f"{now.target} cannot be fast-forwarded to {worktree.branch}: it has commits the "
                f"branch lacks. Merge with squash instead. (git: {done.stderr.strip()})"
            )
    else:
        done = git(main, "merge", "--squash", worktree.branch, check=False)
        if done.returncode != 0:
            git(main, "reset", "--merge", check=False)  # leave the main checkout as it was
            said = done.stderr.strip() or done.stdout.strip()
            raise WorktreeError(
                f"squashing {worktree.branch} into {now.target} conflicts; nothing was changed. "
                f"(git: {said})"
            )
        text = message.strip() or _squash_message(worktree)
        committed = git(main, "commit", "--quiet", "-m", text, check=False)
        if committed.returncode != 0:
            git(main, "reset", "--merge", check=False)
            raise WorktreeError(f"git commit failed: {committed.stderr.strip()}")
    landed = out(main, "rev-parse", "HEAD")
    if how == SQUASH:  # the branch goes on from the squashed commit (same files, clean tree)
        git(worktree.path, "reset", "--keep", landed)
    return MergeResult(how, now.target, landed, now.ahead)


def _squash_message(worktree: Worktree) -> str:
    subjects = out(worktree.path, "log", "--reverse", "--format=- %s", f"{worktree.base}..HEAD")
    return f"{worktree.branch} (squashed)\n\n{subjects}\n"


def patch(worktree: Worktree) -> str:
    """Everything the worktree changed since its base, committed or not, new files included,
    as one patch ``git apply`` takes. Uses a scratch index: the worktree's own is untouched."""
    _exists(worktree)
    with tempfile.TemporaryDirectory(prefix="fxdesk-patch-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(worktree.path, "read-tree", "HEAD", env=env)
        git(worktree.path, "add", "--all", env=env)
        return git(worktree.path, "diff", "--cached", "--binary", worktree.base, env=env).stdout


def remove(worktree: Worktree, *, delete_branch: bool) -> str:
    """Remove the worktree's folder (its changes with it) and, when ``delete_branch`` or when
    it holds no commit since its base, its branch; a sentence saying what was done."""
    top = worktree.repository
    if Path(worktree.path).is_dir():
        git(top, "worktree", "remove", "--force", worktree.path)
    else:
        git(top, "worktree", "prune", check=False)  # its folder went some other way
    exists = git(
        top, "rev-parse", "--verify", "--quiet", f"refs/heads/{worktree.branch}", check=False
    )
    if exists.returncode != 0:
        return f"removed the worktree {worktree.path}"
    ahead = out(top, "rev-list", "--count", f"{worktree.base}..refs/heads/{worktree.branch}")
    if delete_branch or ahead == "0":
        git(top, "branch", "--quiet", "-D", worktree.branch)
        return f"removed the worktree {worktree.path} and its branch {worktree.branch}"
    return (
        f"removed the worktree {worktree.path}; kept its branch {worktree.branch} "
        f"({ahead} commit(s) not merged back)"
    )


def _exists(worktree: Worktree) -> None:
    if not Path(worktree.path).is_dir():
        raise WorktreeError(f"the worktree {worktree.path} is gone (removed outside fxdesk)")
