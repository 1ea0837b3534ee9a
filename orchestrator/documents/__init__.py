"""The documents a run folder holds, typed: ``run`` (run.json), ``summary`` (summary.json), ``study``
(study.json) and ``fleet`` (fleet.json). Each module is the only reader and writer of its file and the only
place its name is spelled; each document says its version and reads every older one. Below every layer that
hands a run on (runs, report, study, fleet, results, ci): they pass these types, not dicts."""
