"""The documentation site's build hook (mkdocs.yml): copies the iframe-worker shim, which lets the search's Web
Worker start from file:// (the site read from its folder, with no server), from where scripts/setup.sh installs it
with npm into the site, where mkdocs.yml's polyfills name it. Without it the site still builds (a warning, an
error under --strict) and its search needs a server (`mkdocs serve`)."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig

SHIM = Path(__file__).resolve().parent.parent / ".venv/iframe-worker/node_modules/iframe-worker/shim/index.js"
TARGET = "assets/javascripts/iframe-worker-shim.js"  # as mkdocs.yml's extra.polyfills names it

log = logging.getLogger("mkdocs.plugins.orchestrate")


def on_post_build(config: MkDocsConfig, **kwargs: Any) -> None:
    if not SHIM.is_file():
        log.warning("the search's file:// shim is missing (%s): run scripts/setup.sh, which installs it with npm; "
                    "until then the site's search needs `mkdocs serve`", SHIM)
        return
    target = Path(config.site_dir) / TARGET
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SHIM, target)
