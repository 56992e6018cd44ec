"""The PySide6 face of fxdesk. The only package that imports Qt."""
