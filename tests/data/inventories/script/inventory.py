#!/usr/bin/env python3
"""An inventory script, as a lab's CMDB exporter would be: --list prints every group with _meta hostvars."""
import json
import sys

BOARDS = {"cmdb-nano01": "192.0.2.71", "cmdb-nano02": "192.0.2.72", "cmdb-orin01": "192.0.2.73"}

if len(sys.argv) > 1 and sys.argv[1] == "--host":
    print("{}")
    sys.exit(0)
print(json.dumps({
    "nano": {"hosts": ["cmdb-nano01", "cmdb-nano02"], "vars": {"ansible_user": "nvidia", "rack": "r4"}},
    "orin": {"hosts": ["cmdb-orin01"], "vars": {"ansible_user": "orin"}},
    "jetson": {"children": ["nano", "orin"], "vars": {"ansible_become": True}},
    "_meta": {"hostvars": {name: {"ansible_host": address} for name, address in BOARDS.items()}},
}))
