"""The orchestrate agent: a stdlib-only program run on the target (Python 3.6+).

It is shipped to the board as a zip archive and answers in JSON lines. It never imports the host
package ``orchestrator``.
"""

AGENT_VERSION = "0.1.0"
