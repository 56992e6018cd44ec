"""The main window: its frame (menus, session tree, centre pages, status bar), banners, the
messages it shows, and what it offers at start-up (recovery, crash logs, a data folder it cannot
use)."""
