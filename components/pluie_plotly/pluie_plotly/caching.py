"""The component's assets as a browser keeps them. Streamlit serves a packaged component's files (ASSETS, at
/_stcore/bidi-components/COMPONENT/<file>) with "Cache-Control: public" and no validator, neither ETag nor
Last-Modified: a browser can then neither keep plotly.js between tabs (its heuristic freshness needs
Last-Modified) nor ask whether it changed, so every new tab fetched its 1.5 MB again (0.5 MB gzipped, which the
server compressed anew each time). Served through server.py, AssetCache (ASGI middleware, for st.App) gives each
of the component's files an ETag (a hash of the file) and Last-Modified, as the static folder the bundle came
from gave (Streamlit's app/static/), and "Cache-Control: no-cache": the browser keeps the file and asks each
time whether it changed, and a request that names the file's ETag gets 304 Not Modified, without a body (the
static folder answered it with the whole file). So a tab never runs an old module or bundle after an upgrade.

Plain `streamlit run app.py` has no middleware: the files are served as Streamlit serves them."""

from __future__ import annotations

import hashlib
import os
from email.utils import formatdate
from pathlib import Path

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware

from pluie_plotly import ASSETS, COMPONENT

ROUTE = f"/_stcore/bidi-components/{COMPONENT}/"  # Streamlit's route for the component's files
CACHE_CONTROL = "no-cache"  # kept, and asked again each time (a 304 without the file when unchanged)
_tags: dict[tuple[str, int, int], str] = {}  # (file, mtime_ns, size) -> its ETag, hashed once


def middleware() -> list[Middleware]:
    """AssetCache, for st.App (server.py)."""
    return [Middleware(AssetCache)]


def validators(name: str) -> tuple[str, str] | None:
    """(ETag, Last-Modified) of ASSETS' file ``name``; None for any other name (a folder, a path, nothing)."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    path = Path(ASSETS, name)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not path.is_file():
        return None
    key = (name, stat.st_mtime_ns, stat.st_size)
    if key not in _tags:
        # weak: the gzip middleware inside sends the same file compressed or not, as the browser asks
        _tags[key] = f'W/"{hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()}"'
    return _tags[key], formatdate(stat.st_mtime, usegmt=True)


class AssetCache:
    """ASGI middleware: a GET of one of the component's files gets its validators and CACHE_CONTROL, or 304
    Not Modified when the request names its ETag (If-None-Match); every other request passes untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" and scope.get("method") == "GET" else ""
        found = validators(path.split(ROUTE, 1)[1]) if ROUTE in path else None
        if found is None:
            await self.app(scope, receive, send)
            return
        etag, modified = found
        asked = Headers(scope=scope).get("if-none-match", "")
        if etag in (tag.strip() for tag in asked.split(",")) or asked.strip() == "*":
            headers = [(b"etag", etag.encode()), (b"cache-control", CACHE_CONTROL.encode())]
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_validated(message):
            if message["type"] == "http.response.start" and message["status"] == 200:
                headers = MutableHeaders(scope=message)
                headers["Cache-Control"] = CACHE_CONTROL
                headers["ETag"] = etag
                headers["Last-Modified"] = modified
            await send(message)

        await self.app(scope, receive, send_validated)
