"""The agent: ``context`` (the 16 KB system prompt) and the loop. Importing does nothing."""
