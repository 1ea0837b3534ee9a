"""orchestrate: remote Nsight Systems profiling of Jetson boards and fleets, from the host."""

__version__ = "0.1.0"
