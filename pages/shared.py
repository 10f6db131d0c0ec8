"""What every page shares: the store's engine, opened once per server process and URL."""
import streamlit as st

from db import database_url, init_db


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    return init_db(url)


def get_engine():
    # the URL comes from PLUIE_DB_URL / pluie_lab.toml / the embedded default (db.engine)
    return _engine_for(database_url())
