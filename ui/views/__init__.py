"""The analysis pages' reads of the store, cached per store state, the scope and selection of their sidebars, their
tables, the read-only sections of the Correlation page and of the pair under review, and the read-ahead that fills
the caches while a person reads the first page."""
