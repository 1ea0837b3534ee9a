"""The results dashboard: a static, offline site of every metric's history per app and board kind."""
