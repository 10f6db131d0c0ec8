"""The ground floor of the page helpers: the store's engine, the page guard, user text, scripts in the page, the menu,
and the Streamlit private objects the app relies on."""
