"""JSON-lines output: one JSON object per line on stdout, flushed at once."""
import json
import sys


def emit(event, **fields):
    fields["event"] = event
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def fail(msg, **fields):
    fields["failed"] = True
    fields["msg"] = msg
    emit("error", **fields)
