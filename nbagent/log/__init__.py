"""The log's vocabulary: the typed event records and their registry (``record.py``), the core records
and the adapter (``events.py``, ``fork_records.py``), the closed vocabularies and the one
:class:`~nbagent.log.vocabulary.Failure` (``vocabulary.py``), and messages (``messages.py``).

A leaf: it imports nothing of nbagent but the floor-1 modules (``_json``, ``errors``, ``units``,
``redaction``), so the models, the core and every reader of a log can stand on it.
"""
