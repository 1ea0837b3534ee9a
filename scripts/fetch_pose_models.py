"""Fetch the two TFLite pose models posebench and the tests run: MediaPipe 0.10.14's wheel carries them.

    python scripts/fetch_pose_models.py [--dest ~/.cache/orchestrate/models]

Downloads that one wheel (no dependencies, any platform's copy of the same files) with pip and unpacks
pose_detection.tflite and pose_landmark_full.tflite. Does nothing when both are already there.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "mediapipe==0.10.14"
MODELS = {"pose_detection.tflite": "mediapipe/modules/pose_detection/pose_detection.tflite",
          "pose_landmark_full.tflite": "mediapipe/modules/pose_landmark/pose_landmark_full.tflite"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=Path.home() / ".cache" / "orchestrate" / "models",
                        help="where posebench's app spec looks for them (the default)")
    args = parser.parse_args()
    if all((args.dest / name).is_file() for name in MODELS):
        return 0
    args.dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
                        "--dest", folder, WHEEL], check=True)
        wheel, = Path(folder).glob("mediapipe-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            for name, member in MODELS.items():
                partial = args.dest / f".{name}.part"
                partial.write_bytes(archive.read(member))
                partial.replace(args.dest / name)
    print(f"pose models in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
