#!/usr/bin/env bash
# Sets orchestrate up on a Debian/Ubuntu machine, as root: the system packages it drives (nsys,
# OpenSSH, Xvfb, GLES demos), then a virtual environment in .venv with orchestrate and its test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-system-deps.sh
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# Ansible's own reading of inventories: a program of its own, licensed as Ansible is (ansible_helper/COPYING)
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ./ansible_helper
# the orchestrate.jetson collection (collection/), built as Galaxy builds it and installed where this Python's
# Ansible finds it without configuration (its site-packages' ansible_collections)
rm -rf build/collection
PYTHONWARNINGS=ignore .venv/bin/ansible-galaxy collection build collection --output-path build/collection --force >/dev/null
PYTHONWARNINGS=ignore .venv/bin/ansible-galaxy collection install --force -p "$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])')" \
    build/collection/orchestrate-jetson-*.tar.gz >/dev/null 2>&1
# the sources' bytecode written once, as installing a package does (an editable install does not, and where
# PYTHONDONTWRITEBYTECODE is set every command would compile them again: 0.1 s of each start)
.venv/bin/python -m compileall -q orchestrator remote_agent
# the TFLite pose models the analysis tests profile (from MediaPipe's wheel)
.venv/bin/python scripts/fetch_pose_models.py
# speedscope, a real consumer of the Chrome traces `orchestrate trace` writes: the tests open them in it
if command -v npm >/dev/null && [ ! -f .venv/speedscope/node_modules/speedscope/dist/release/index.html ]; then
    npm install --prefix .venv/speedscope --no-audit --no-fund --silent speedscope@1.25.0 >/dev/null
fi
# the Web Worker shim the documentation site's search needs when read from files (mkdocs.yml's hook copies it)
if command -v npm >/dev/null && [ ! -f .venv/iframe-worker/node_modules/iframe-worker/shim/index.js ]; then
    npm install --prefix .venv/iframe-worker --no-audit --no-fund --silent iframe-worker@1.0.4 >/dev/null
fi
