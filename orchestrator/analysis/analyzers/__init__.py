"""The analyzers: each reads the arrays of export/ (and the spans of intervals/) and says one thing of the run:
its frames, API tables, GPU work, timeline, each thread's time by share, the verdict and its evidence."""
