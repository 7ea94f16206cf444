"""Reads gnnmpi's binary .gnn dataset (versions 1 and 2, written by
`gnnmpi gen` and `gnnmpi convert`; docs/data-formats.md) into what
sage_torch.load returns for an OGB directory, so that the peers train on
the same file as gnnmpi without parsing csv.gz: the sections are read
from a memory map into arrays of their own (the peers normalise features
in place), checked against their lengths (not their CRCs: gnnmpi verifies
those).

    indptr, indices, feat, labels, parts, split = load("graph.gnn", None)

Dense features come back as a float32 array (float16 sections widened),
sparse ones (version 2) scattered into a dense float32 array, as the csv
reader gives them. The adjacency is the file's: rows sorted and free of
repeats, as gnnmpi writes them (checked).
"""

import json
import struct
import sys

import numpy as np

MAGIC = b"\x89GNNMPI\n"
DTYPES = {"int64": "<i8", "int32": "<i4", "float64": "<f8", "float32": "<f4", "float16": "<f2"}


def is_gnn(path):
    """Whether path is a file that starts with the .gnn magic."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except (IsADirectoryError, FileNotFoundError, NotADirectoryError):
        return False


def pick_split(where, names, split):
    """The split to use among names: split, or the first when None; exits
    with a message naming where when there is none or it is not there."""
    if split is None:
        if not names:
            sys.exit(f"{where}: no splits")
        split = names[0]
    if split not in names:
        sys.exit(f"{where}: no split {split!r} (have {', '.join(names)})")
    return split


def load(path, split):
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:8] != MAGIC:
            sys.exit(f"{path}: not a .gnn file")
        version, _flags, meta_off, meta_len = struct.unpack_from("<IIQQ", head, 8)
        if version not in (1, 2):
            sys.exit(f"{path}: .gnn version {version} (a part of a partitioned dataset?); want 1 or 2")
        f.seek(meta_off)
        meta = json.loads(f.read(meta_len))
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    sections = {s["name"]: s for s in meta["sections"]}

    def section(name):
        s = sections.get(name)
        if s is None:
            sys.exit(f"{path}: no section {name!r}")
        dt = np.dtype(DTYPES[s["dtype"]])
        if s["count"] * dt.itemsize != s["length"] or s["offset"] + s["length"] > mm.size:
            sys.exit(f"{path}: section {name!r} is corrupt ({s['count']}×{s['dtype']} in {s['length']} bytes)")
        return mm[s["offset"]:s["offset"] + s["length"]].view(dt)

    n = meta["num_nodes"]
    indptr = np.array(section("indptr"), dtype=np.int64)
    indices = np.array(section("indices"), dtype=np.int64)
    if indptr.size != n + 1 or indptr[-1] != indices.size:
        sys.exit(f"{path}: indptr of {indptr.size} entries ending at {indptr[-1]} for {n} vertices and {indices.size} entries")
    # Rows sorted and distinct: every step within a row is positive.
    step = np.diff(indices)
    inner = np.ones(step.size, dtype=bool)
    starts = indptr[1:-1]
    inner[starts[(starts > 0) & (starts < indices.size)] - 1] = False
    if (step[inner] <= 0).any():
        sys.exit(f"{path}: a row's entries are not sorted and distinct")
    if meta.get("feature_format") == "csr":
        fptr = np.asarray(section("feat/indptr"), dtype=np.int64)
        fidx = np.asarray(section("feat/indices"), dtype=np.int64)
        vals = np.ones(fidx.size, dtype=np.float32) if meta.get("feature_pattern") else np.asarray(section("feat/values"), dtype=np.float32)
        feat = np.zeros((n, meta["num_features"]), dtype=np.float32)
        feat[np.repeat(np.arange(n), np.diff(fptr)), fidx] = vals
    else:
        feat = np.array(section("features"), dtype=np.float32).reshape(n, meta["num_features"])
    labels = np.array(section("labels"), dtype=np.int64)
    split = pick_split(path, [s["name"] for s in meta.get("splits", [])], split)
    parts = {k: np.sort(np.asarray(section(f"split/{split}/{k}"), dtype=np.int64)) for k in ("train", "valid", "test")}
    return indptr, indices, feat, labels, parts, split
