"""PyInstaller runtime hook: give programs fxdesk starts the person's environment, not the bundle's.

On Linux the bootloader points ``LD_LIBRARY_PATH`` at the bundle (keeping the person's value in
``LD_LIBRARY_PATH_ORIG``). fxdesk itself no longer needs the variable once it runs: the dynamic
loader read it at start-up, and keeps that copy for every library loaded later. Programs fxdesk
starts do not want it: a browser opened for a server's URL, the file manager, ``git`` or
``bwrap`` would load the bundle's OpenSSL, SQLite or libffi instead of their own. Restoring it
here, before any fxdesk code runs, covers every child at once (``subprocess``, asyncio, Qt's
``QDesktopServices``). The doctor's Qt probe re-runs the bundle, whose bootloader sets it again.
"""

import os
import sys

if sys.platform.startswith("linux") and getattr(sys, "frozen", False):
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)
