"""The agent's tools: one registry (``registry``), tools grouped by what they touch."""
