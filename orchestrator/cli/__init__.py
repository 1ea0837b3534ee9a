"""The orchestrate command line."""
from .main import main, run

__all__ = ["main", "run"]
