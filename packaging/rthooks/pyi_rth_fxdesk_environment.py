"""PyInstaller runtime hook: programs fxdesk starts get the person's environment, not the bundle's.

On Linux the bootloader points ``LD_LIBRARY_PATH`` at the bundle (keeping the person's value in
``LD_LIBRARY_PATH_ORIG``) and passes its own state to the re-executed process in ``_PYI_*``
variables. fxdesk needs neither once its Python runs: the dynamic loader read the library path
at start-up and keeps that copy for every library loaded later. Programs fxdesk starts must not
get them:

- a browser opened for a server's URL, the file manager, ``git`` or ``bwrap`` would load the
  bundle's OpenSSL, SQLite or libffi instead of their own;
- fxdesk itself run again (the doctor's Qt probe, ``fxdesk _probe-qt``) would take the
  ``_PYI_*`` state for its own, skip setting the library path, and miss the bundle's
  libraries (found on a fresh Debian 12: the probe could not load ``libxkbcommon.so.0``).

Restoring both here, before any fxdesk code runs, covers every child at once (``subprocess``,
asyncio, Qt's ``QDesktopServices``); each fxdesk child then starts as a fresh launch.
"""

import os
import sys

if sys.platform.startswith("linux") and getattr(sys, "frozen", False):
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)
    for name in [name for name in os.environ if name.startswith("_PYI_")]:
        del os.environ[name]
