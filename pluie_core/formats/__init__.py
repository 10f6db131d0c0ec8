"""One reader per kind of pair file; pluie_core.io chooses among them."""
