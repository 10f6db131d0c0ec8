"""The HTTP API for pipelines: /api/v1 on the app's own port (server.py), behind the same accounts.

A FastAPI application (api.app; its ground floor api.base) mounted beside the app's pages, with an OpenAPI description at
/api/v1/openapi.json. Every request carries a personal token (``Authorization: Bearer pluie_…``, made on the
Accounts page, the "Your tokens" box or ``python -m db accounts token NAME``) and acts as its account: every
write goes through the store's own role check (db.access.require), as a page's does. The library's client
is pluie_core.client.Lab. Layer: glue like the pages (imports db and pluie_core, never Streamlit).
"""

from __future__ import annotations

PREFIX = "/api/v1"
