"""Everything on flash goes through here: ``fs`` (checked paths, capped reads, atomic
writes), ``sessions``, ``memory``, ``skills``, ``cronjobs``. Importing does nothing."""
