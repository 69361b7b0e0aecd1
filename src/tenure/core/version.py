"""The version of tenure: one place, read by the package build, the server and the clients."""

__version__ = "0.1.0.dev0"
