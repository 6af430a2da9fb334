"""Background services the I/O thread ticks: ``cron`` (scheduled jobs) and ``heartbeat``
(the periodic look at HEARTBEAT.md). Importing the package does nothing.

Each service turns what is due into an inbound bus message, like a chat message, in its
own session; the agent answers it and the reply goes to the chat the job names.
"""
