"""PLUIE Lab — the entry point: a thin frame that opens the store and routes to the pages.

    streamlit run app.py
"""
import streamlit as st

from pages.shared import get_engine

st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
get_engine()  # opens the store and applies pending migrations before any page draws

pages = {
    "Data": [
        st.Page("pages/home.py", title="Datasets", icon="📚", default=True),
        st.Page("pages/import_pairs.py", title="Import", icon="📥", url_path="import"),
        st.Page("pages/export.py", title="Export", icon="📤", url_path="export"),
    ],
}
st.navigation(pages).run()
