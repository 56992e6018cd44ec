"""The PySide6 face of fxdesk. The only package that imports Qt."""

from fxdesk.gui import pyside_imports

pyside_imports.install()  # before the window's modules: PySide6 inspects each one it sees
