"""The board's web side: the setup portal (``portal``)."""
