"""orchestrate ci: a study run as a CI job, its runs stored, each gated metric judged against the jobs before
it (``job``), and what the job says to a CI system (``outputs``: summary, JUnit, Markdown, benchmark JSON)."""
