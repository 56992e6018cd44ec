"""fxdesk: a native desktop control room for AI coding agents."""

__version__ = "0.1.0"
APP_NAME = "fxdesk"
APP_ID = "io.github.fxdesk.Fxdesk"
