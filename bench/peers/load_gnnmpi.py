#!/usr/bin/python3
"""bench/peers/load_gnnmpi.py: load a model gnnmpi exported (train
--save-model, or gnnmpi export) into PyTorch, run full-neighbour inference
and compare with gnnmpi's own logits (train --save-logits).

    /usr/bin/python3 bench/peers/load_gnnmpi.py --model m.safetensors \
        --data ../shared/data/cora --logits m.npy [--pyg auto|on|off]

The file is read with a dozen lines of plain Python (read_safetensors; no
`safetensors` package needed): an 8-byte little-endian header length, the
JSON header, then the tensors. The model is rebuilt from the metadata
(docs/data-formats.md, "Model export") in plain PyTorch, and also, when
torch_geometric is importable (or --pyg on), from PyG's SAGEConv, GCNConv
and GATConv with the tensors loaded by load_state_dict under their own
names, which is what makes the names PyG-compatible.

The input is prepared as gnnmpi prepares it (sage_torch.load: an OGB
raw-layout directory; rows of the adjacency sorted and distinct, edge
"src,dst" putting dst in row src, i.e. src aggregates over dst):

  * feature_norm "row": each row times 1/max(row sum, 1), computed in
    float64 and rounded to float32 (dense.NormalizeRows);
  * SAGE: h_i = x_i·W_selfᵀ… as PyG's SAGEConv (mean over the row's
    entries, root weight lin_r, bias on lin_l), ReLU between layers,
    hidden outputs L2-normalised when "normalize" is true;
  * GCN: Â = D̃^{-1/2}(A+I)D̃^{-1/2} with D̃ = degree + 1 (model.GCNNorm over
    the full neighbourhood; a row's existing self-loop is kept, one added
    where missing), H' = Â·H·W + b;
  * GAT: z = H·W; for head k e_ij = LeakyReLU_0.2(att_dst·z_i + att_src·z_j)
    over j in row i plus i itself (added where missing), softmax over j,
    o_i = Σ α_ij z_j; heads concatenated in hidden layers (ELU after),
    averaged in the output layer; + bias.

It checks that the predicted class (argmax) of every vertex equals
gnnmpi's and that every logit is within --tol (default 1e-4, absolute) of
gnnmpi's, for the plain model and for PyG's, prints one JSON line and
exits 1 on a mismatch.
"""

import argparse
import json
import os
import struct
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="index_reduce")  # beta in torch 1.13; its amax is what is wanted
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sage_torch import load  # noqa: E402  (the same reader as the training peer)

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "BF16": None,
          "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """(tensors, metadata) of a safetensors file, with numpy alone."""
    with open(path, "rb") as f:
        b = f.read()
    (n,) = struct.unpack("<Q", b[:8])
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(b)[8 + n:]
    tensors = {}
    for name, e in header.items():
        lo, hi = e["data_offsets"]
        dt = DTYPES[e["dtype"]]
        tensors[name] = torch.from_numpy(np.frombuffer(data[lo:hi], dtype=np.dtype(dt).newbyteorder("<"))
                                         .reshape(e["shape"]).copy())
    return tensors, meta


def prepare(feat, norm):
    if norm == "row":
        s = feat.sum(axis=1, dtype=np.float64)
        feat = (feat.astype(np.float64) * (1.0 / np.maximum(s, 1.0))[:, None]).astype(np.float32)
    elif norm != "none":
        sys.exit(f"feature_norm {norm!r}: want row or none")
    return torch.from_numpy(np.ascontiguousarray(feat))


def sparse(rows, cols, vals, n):
    return torch.sparse_coo_tensor(np.vstack([rows, cols]), torch.as_tensor(vals, dtype=torch.float32), (n, n)).coalesce()


def with_self_loops(indptr, indices, n):
    """(rows, cols) of the adjacency with (i, i) added to rows lacking it."""
    rows = np.repeat(np.arange(n), np.diff(indptr))
    has = np.zeros(n, dtype=bool)
    has[rows[rows == indices]] = True
    miss = np.nonzero(~has)[0]
    return np.concatenate([rows, miss]), np.concatenate([indices, miss])


def plain_forward(t, meta, x, indptr, indices):
    """The model's logits in plain PyTorch."""
    n = x.shape[0]
    kind, layers = meta["model"], int(meta["layers"])
    deg = np.diff(indptr)
    rows = np.repeat(np.arange(n), deg)
    if kind == "sage":
        a = sparse(rows, indices, (1.0 / np.maximum(deg, 1))[rows], n)
    elif kind == "gcn":
        r, c = with_self_loops(indptr, indices, n)
        selfdeg = np.bincount(rows[rows == indices], minlength=n)
        d = (deg - selfdeg).astype(np.float64) + 1  # degrees without self-loops, + 1
        a = sparse(r, c, 1.0 / np.sqrt(d[r] * d[c]), n)
    elif kind == "gat":
        r, c = with_self_loops(indptr, indices, n)
        r, c = torch.from_numpy(r), torch.from_numpy(c)
    h = x
    for l in range(layers):
        p = f"convs.{l}."
        last = l == layers - 1
        if kind == "sage":
            h = h @ t[p + "lin_r.weight"].T + torch.sparse.mm(a, h @ t[p + "lin_l.weight"].T) + t[p + "lin_l.bias"]
            if not last and meta.get("normalize") == "true":
                h = F.normalize(h, p=2.0, dim=-1)
        elif kind == "gcn":
            h = torch.sparse.mm(a, h @ t[p + "lin.weight"].T) + t[p + "bias"]
        else:
            att_src, att_dst = t[p + "att_src"][0], t[p + "att_dst"][0]  # heads×d
            heads, d = att_src.shape
            z = (h @ t[p + "lin.weight"].T).view(n, heads, d)
            el = (z * att_dst).sum(-1)  # n×heads: the destination's term
            er = (z * att_src).sum(-1)  # the source's term
            e = F.leaky_relu(el[r] + er[c], float(meta["negative_slope"]))  # E×heads
            mx = torch.full((n, heads), -float("inf")).index_reduce_(0, r, e, "amax")
            w = torch.exp(e - mx[r])
            s = torch.zeros(n, heads).index_add_(0, r, w)
            alpha = w / s[r]
            o = torch.zeros(n, heads, d).index_add_(0, r, alpha.unsqueeze(-1) * z[c])
            h = o.reshape(n, heads * d) if not last else o.mean(1)
            h = h + t[p + "bias"]
        if not last:
            h = F.elu(h) if meta["activation"] == "elu" else F.relu(h)
    return h


def pyg_forward(t, meta, x, indptr, indices):
    """The model's logits with PyG's layers, the tensors loaded under their
    names (the GATConv of PyG < 2.5 names the projection lin_src/lin_dst)."""
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv

    n = x.shape[0]
    rows = np.repeat(np.arange(n), np.diff(indptr))
    # PyG's messages flow from edge_index[0] (source j) to edge_index[1]
    # (target i): row i's entries are its sources.
    ei = torch.from_numpy(np.vstack([indices, rows]).astype(np.int64))
    kind, layers = meta["model"], int(meta["layers"])
    dims = json.loads(meta["dims"])
    convs = []
    for l in range(layers):
        last = l == layers - 1
        if kind == "sage":
            conv = SAGEConv(dims[l], dims[l + 1], aggr="mean", root_weight=True, bias=True,
                            normalize=not last and meta.get("normalize") == "true")
        elif kind == "gcn":
            conv = GCNConv(dims[l], dims[l + 1], add_self_loops=True, normalize=True, bias=True)
        else:
            heads = int(meta["out_heads"] if last else meta["heads"])
            d = dims[l + 1] if last else dims[l + 1] // heads
            conv = GATConv(dims[l], d, heads=heads, concat=not last, negative_slope=float(meta["negative_slope"]),
                           add_self_loops=True, bias=True)
        want = conv.state_dict()
        sd = {}
        for k in want:
            src = "lin.weight" if k in ("lin_src.weight", "lin_dst.weight") else k
            sd[k] = t[f"convs.{l}.{src}"].reshape(want[k].shape)
        conv.load_state_dict(sd, strict=True)
        conv.eval()
        convs.append(conv)
    h = x
    with torch.no_grad():
        for l, conv in enumerate(convs):
            h = conv(h, ei)
            if l < layers - 1:
                h = F.elu(h) if meta["activation"] == "elu" else F.relu(h)
    return h


def compare(name, got, want, tol):
    got = got.detach().numpy()
    diff = float(np.abs(got - want).max()) if got.size else 0.0
    pred_diff = int((got.argmax(1) != want.argmax(1)).sum())
    ok = got.shape == want.shape and diff <= tol and pred_diff == 0
    return {"impl": name, "max_abs_diff": diff, "pred_mismatches": pred_diff, "ok": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="safetensors file of train --save-model or gnnmpi export")
    ap.add_argument("--data", required=True, help="OGB raw-layout dataset directory the model was trained on")
    ap.add_argument("--split", default=None, help="split directory (only read for the loader's checks)")
    ap.add_argument("--logits", required=True, help="gnnmpi's logits, train --save-logits (.npy, n×classes)")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest absolute difference of a logit")
    ap.add_argument("--pyg", choices=["auto", "on", "off"], default="auto", help="also run PyG's layers (auto: when importable)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.time()
    t, meta = read_safetensors(args.model)
    if meta.get("format") != "gnnmpi-model-1":
        sys.exit(f"{args.model}: metadata format {meta.get('format')!r}, want gnnmpi-model-1")
    indptr, indices, feat, _, _, _ = load(args.data, args.split)
    x = prepare(feat, meta["feature_norm"])
    if x.shape[1] != int(meta["in"]):
        sys.exit(f"{args.data}: {x.shape[1]} features, the model takes {meta['in']}")
    want = np.load(args.logits)
    results = []
    with torch.no_grad():
        results.append(compare("torch", plain_forward(t, meta, x, indptr, indices), want, args.tol))
    pyg = args.pyg == "on"
    if args.pyg == "auto":
        try:
            import torch_geometric  # noqa: F401
            pyg = True
        except ImportError:
            pyg = False
    if pyg:
        results.append(compare("pyg", pyg_forward(t, meta, x, indptr, indices), want, args.tol))
    out = {"model": meta["model"], "dataset": meta.get("dataset"), "vertices": int(x.shape[0]),
           "results": results, "pyg": pyg, "seconds": round(time.time() - t0, 2)}
    print(json.dumps(out))
    if not all(r["ok"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
