"""Where sessions are kept: the store protocol and what both backends share (locations, opening,
the checked reads, read budgets, following, copying, pruning, read-only reading); the backends are
the subpackages :mod:`nbagent.store.sqlite` and :mod:`nbagent.store.postgres`."""
