"""Who uses the app and what their browser keeps: sign-in (password and identity provider), the session cookie's
server routes, and the per-browser memory of half-filled forms."""
