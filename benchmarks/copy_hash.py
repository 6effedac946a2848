"""Collecting a big output, against ``cp``: ``python -m benchmarks.copy_hash [--size-mb 1024]``.

One file (random bytes, written once and flushed) is copied, in turns, round after round:

- ``cp``: GNU cp (copy_file_range inside the kernel), the yardstick;
- a plain read: the file read once into nothing, in this process (``cat`` without a pipe);
- read + sha256: the file read and hashed, no copy (what any collection that hashes costs);
- the earlier collect: read, hash, write in one loop (``os.read``, ``sha256.update``,
  ``write``), as ``sandbox.tree.copy_fd_to`` did;
- ``copy_hashed``: ``sandbox.files.hashed_copy``, the copy in the kernel while a thread hashes
  what was copied, as ``copy_fd_to`` does now.

Each copy goes to a new file on the same filesystem, removed after; dirty pages are flushed
(``sync``) before each measurement, so no copy pays for the one before it. Medians of
``--rounds``; every ratio is to ``cp`` in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.files.hashed_copy import copy_hashed

CHUNK = 1 << 20


def make(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        left = size
        while left:
            block = os.urandom(min(CHUNK * 16, left))
            digest.update(block)
            out.write(block)
            left -= len(block)
    os.sync()
    return digest.hexdigest()


def cp(src: Path, dst: Path) -> str | None:
    subprocess.run(["cp", str(src), str(dst)], check=True)
    return None


def plain_read(src: Path, dst: Path) -> str | None:
    fd = os.open(src, os.O_RDONLY)
    try:
        while os.read(fd, CHUNK):
            pass
    finally:
        os.close(fd)
    return None


def read_hash(src: Path, dst: Path) -> str | None:
    digest = hashlib.sha256()
    fd = os.open(src, os.O_RDONLY)
    try:
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_hash_write(src: Path, dst: Path) -> str | None:
    digest = hashlib.sha256()
    fd = os.open(src, os.O_RDONLY)
    try:
        with dst.open("wb") as out:
            while chunk := os.read(fd, CHUNK):
                digest.update(chunk)
                out.write(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def kernel_copy_hashed(src: Path, dst: Path) -> str | None:
    fd = os.open(src, os.O_RDONLY)
    out = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        return copy_hashed(fd, out)
    finally:
        os.close(out)
        os.close(fd)


WAYS: list[tuple[str, Callable[[Path, Path], str | None]]] = [
    ("cp", cp),
    ("plain read (no copy, no hash)", plain_read),
    ("read + sha256 (no copy)", read_hash),
    ("earlier collect: read, hash, write", read_hash_write),
    ("copy_hashed: kernel copy, hashing thread", kernel_copy_hashed),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.copy_hash", description=__doc__)
    p.add_argument("--size-mb", type=int, default=1024, help="the file's size (default 1024)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (median; default 5)")
    p.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="praxis-copy-", dir=args.dir))
    try:
        src, dst = work / "src.bin", work / "dst.bin"
        want = make(src, args.size_mb << 20)
        plain_read(src, dst)  # warm-up: the source in the page cache, as a phase leaves it
        times: dict[str, list[float]] = {name: [] for name, _ in WAYS}
        for _ in range(args.rounds):
            for name, way in WAYS:
                dst.unlink(missing_ok=True)
                os.sync()
                t0 = time.perf_counter()
                got = way(src, dst)
                times[name].append(time.perf_counter() - t0)
                if got is not None and got != want:
                    raise SystemExit(f"{name}: sha256 {got}, not {want}")
        dst.unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(times["cp"])
    print(f"{args.size_mb} MiB, median of {args.rounds} rounds, ratios to cp in the same run:")
    print("| way | seconds | / cp |")
    print("|---|---|---|")
    for name, _ in WAYS:
        secs = statistics.median(times[name])
        print(f"| {name} | {secs:.2f} | {secs / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
