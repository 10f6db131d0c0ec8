"""The component's assets as a browser keeps them. Streamlit serves a packaged component's files (ASSETS, at
/_stcore/bidi-components/COMPONENT/<file>) with "Cache-Control: public" and no validator, neither ETag nor
Last-Modified: a browser can then neither keep plotly.js between tabs (its heuristic freshness needs
Last-Modified) nor ask whether it changed, so every new tab fetched its 1.5 MB again (0.5 MB gzipped, which the
server compressed anew each time). Served through server.py, AssetCache (ASGI middleware, for st.App) gives each
of the component's files an ETag (its digest) and Last-Modified, as the static folder the bundle came from gave
(Streamlit's app/static/), and:

- the bundle asked for at its versioned address (BUNDLE?v=<its digest>, as the pages ask for it: ui.charts),
  "Cache-Control: public, max-age=31536000, immutable": a new tab takes it from the browser's cache without
  asking the server (which may be busy computing the page); a rebuilt bundle has another digest, so another
  address;
- any other of its files (the module, whose address Streamlit chooses), "Cache-Control: no-cache": the browser
  keeps it and asks each time whether it changed, and a request that names the file's ETag gets 304 Not
  Modified, without a body (the static folder answered it with the whole file).

So a tab never runs an old module or bundle after an upgrade. Plain `streamlit run app.py` has no middleware:
the files are served as Streamlit serves them."""

from __future__ import annotations

import os
from email.utils import formatdate
from urllib.parse import parse_qs

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware

from pluie_plotly import ASSETS, BUNDLE, COMPONENT, digest

ROUTE = f"/_stcore/bidi-components/{COMPONENT}/"  # Streamlit's route for the component's files
REVALIDATED = "no-cache"  # kept, and asked again each time (a 304 without the file when unchanged)
IMMUTABLE = "public, max-age=31536000, immutable"  # the bundle at its versioned address: a year, never asked


def middleware() -> list[Middleware]:
    """AssetCache, for st.App (server.py)."""
    return [Middleware(AssetCache)]


def policy(name: str, query: bytes) -> tuple[str, str, str] | None:
    """(ETag, Last-Modified, Cache-Control) of ASSETS' file ``name`` asked for with ``query``; None for any other
    name."""
    found = digest(name)
    if found is None:
        return None
    versioned = name == BUNDLE and parse_qs(query.decode("latin-1")).get("v") == [found]
    modified = formatdate(os.stat(ASSETS / name).st_mtime, usegmt=True)
    # weak: the gzip middleware inside sends the same file compressed or not, as the browser asks
    return f'W/"{found}"', modified, IMMUTABLE if versioned else REVALIDATED


class AssetCache:
    """ASGI middleware: a GET of one of the component's files gets its validators and its Cache-Control
    (policy), or 304 Not Modified when the request names its ETag (If-None-Match); every other request passes
    untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" and scope.get("method") == "GET" else ""
        found = policy(path.split(ROUTE, 1)[1], scope.get("query_string", b"")) if ROUTE in path else None
        if found is None:
            await self.app(scope, receive, send)
            return
        etag, modified, cache_control = found
        asked = Headers(scope=scope).get("if-none-match", "")
        if etag in (tag.strip() for tag in asked.split(",")) or asked.strip() == "*":
            headers = [(b"etag", etag.encode()), (b"cache-control", cache_control.encode())]
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_validated(message):
            if message["type"] == "http.response.start" and message["status"] == 200:
                headers = MutableHeaders(scope=message)
                headers["Cache-Control"] = cache_control
                headers["ETag"] = etag
                headers["Last-Modified"] = modified
            await send(message)

        await self.app(scope, receive, send_validated)
