"""A stdio server's own program under /tmp stays visible in its sandbox (the sandbox's /tmp is
a fresh folder): the virtual environment its command belongs to and the script it runs are
bound read-only, and nothing else. Found by running the suite from a clone under /tmp."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fxdesk.tools.mcp.launch import program_paths


def test_a_venv_program_and_a_script_under_tmp_are_bound_and_nothing_else() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as name:
        root = Path(name).resolve()
        venv = root / "venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "bin" / "python").write_text("")
        (root / "srv").mkdir()
        (root / "srv" / "server.py").write_text("")
        argv = (str(venv / "bin" / "python"), str(root / "srv" / "server.py"), "stdio")
        assert program_paths(argv) == (venv, root / "srv")
        assert program_paths(("/usr/bin/python3", "/opt/x.py", "/tmp/missing.py")) == ()
