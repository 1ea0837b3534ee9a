"""The runs asked through the Model Context Protocol: `orchestrate mcp` (server.py), its answers with their
evidence (answers.py, work.py, across.py, sql.py), the root they stay inside (root.py), the bound on their size
(bounds.py) and the HTTP guard (http_guard.py)."""
