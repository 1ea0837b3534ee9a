"""Studies: a matrix of app variants run with repeats on one target, and statistics that hold on noisy
boards (``spec`` loads and expands study files, ``runner`` runs them; the statistics are ``orchestrator.stats``)."""
