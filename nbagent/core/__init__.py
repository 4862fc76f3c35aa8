"""The agent runtime: the agent, its driver and loop, the inbox, the journal, tools and hooks (the records,
messages and vocabularies it writes are ``nbagent.log``'s)."""
