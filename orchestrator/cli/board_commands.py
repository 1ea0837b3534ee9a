"""The commands that change a board once, before any run (`nsys deploy`): parse, call the library, render."""
from __future__ import annotations

import argparse
from typing import Any

from .options import add_inventory_options, add_ssh_options, connect_options, existing_folder, stderr, vault_options


def add_parsers(sub: Any) -> None:
    nsys = sub.add_parser("nsys", help="put nsys on a board that has none (as the Nsight Systems GUI does)",
                          description="Board-side Nsight Systems.")
    verbs = nsys.add_subparsers(dest="nsys_command", required=True, metavar="deploy",
                                help="deploy: upload a host install's target folder to the board")
    deploy = verbs.add_parser(
        "deploy", help="upload a host Nsight Systems install's target folder to the board",
        description="Upload the target-linux-tegra-armv8 folder of a host Nsight Systems install to the board's "
                    "/opt/nvidia/nsight_systems/, where the GUI puts it (JetPack 4 boards have no nsys of their "
                    "own). Only files that differ are sent, every one verified by sha256; run it again to finish "
                    "one cut short. Needs root on the board: root login or ansible_become.")
    deploy.add_argument("--target", required=True, help="inventory host")
    deploy.add_argument("--from", dest="source", required=True, type=existing_folder,
                        help="the host's Nsight Systems folder (e.g. /opt/nvidia/nsight-systems/2024.5.4) or its "
                             "target-linux-tegra-armv8 folder")
    add_inventory_options(deploy, "Ansible inventory (as for profile)")
    add_ssh_options(deploy)


def cmd_nsys(args: argparse.Namespace) -> int:
    from ..inventory.hosts import find_host
    from ..runs.nsys_deploy import deploy_nsys
    host = find_host(args.inventory, args.target, vault_options(args))
    done = deploy_nsys(host, connect_options(args), args.source)
    kept = done.files - done.sent
    stderr().print(f"{done.folder} on {args.target}: {done.sent} files sent ({done.sent_bytes / 2**20:.1f} MB), "
                   f"{kept} already in place, {done.removed} old ones removed; all {done.files} verified",
                   highlight=False, markup=False)
    print(done.folder)
    return 0
