"""Who uses the app and what the app keeps for them: sign-in (password and identity provider), the session
cookie's server routes, and the memory of half-filled forms (per account in the store, else per browser)."""
