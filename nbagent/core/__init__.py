"""The agent runtime: the agent, its driver and loop, the inbox, the journal, tools, hooks, messages and events."""
