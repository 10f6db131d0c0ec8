"""PLUIE Lab — the entry point: a thin frame that opens the store and routes to the pages.

    streamlit run app.py
"""
import streamlit as st

from pages.shared import get_engine

st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
get_engine()  # opens the store and applies pending migrations before any page draws

# url paths are the file names (the default): a custom path that differs from the file name
# makes the browser's first request for it land on "Page not found", because pages/ exists.
pages = {
    "Data": [
        st.Page("pages/home.py", title="Datasets", icon=":material/dataset:", default=True),
        st.Page("pages/import_pairs.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/export.py", title="Export", icon=":material/download:"),
    ],
}
st.navigation(pages).run()
