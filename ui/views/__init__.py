"""The analysis pages' reads of the store, cached per store state, the scope and selection of their sidebars, their
tables, and the read-ahead that fills the caches while a person reads the first page."""
