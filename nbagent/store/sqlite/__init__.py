"""The SQLite backend: many sessions in one file beside the notebook (SPEC §6.1).

The store itself (:mod:`.store`, ``SessionFile``), its schema and resume checks, what a file is
before SQLite opens it, the writer lease on a byte range of the file, and the raw descriptor and
network-mount checks they share. Nothing is imported here: name the module you use.
"""
