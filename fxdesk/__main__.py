"""``python -m fxdesk``: the same entry point as the ``fxdesk`` command."""

import sys

from fxdesk.cli import main

sys.exit(main())
