"""Fleets: every matching board of the inventory at once (``runner``), chosen with Ansible's patterns
(``patterns``); each board's result streamed to disk as it ends, a recap and a page at the end."""
