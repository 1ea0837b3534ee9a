"""What a run measured, read from its folder's documents: the figures a study, a fleet, the results
database and the gate keep of a run (``run_metrics``, ``measured``), and the board's telemetry during the
capture (``board_samples`` parses board.jsonl, ``board`` makes the summary's board and energy sections,
``validity`` flags a board unfit to be measured). Pure over the documents and files handed in."""
