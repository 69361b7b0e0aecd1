"""The HTTP server: an ASGI app (FastAPI on uvicorn) over :class:`tenure.Service`."""

from tenure.server.http.app import create_app

__all__ = ["create_app"]
