"""What every page shares: the store's engine, opened once per server process."""
import streamlit as st

from db import init_db


@st.cache_resource(show_spinner=False)
def get_engine():
    # the URL comes from PLUIE_DB_URL / pluie_lab.toml / the embedded default (db.engine)
    return init_db()
