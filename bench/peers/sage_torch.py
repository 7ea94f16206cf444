#!/usr/bin/python3
"""bench/peers/sage_torch.py: the plain PyTorch peer of gnnmpi's minibatch
GraphSAGE (issue 19's baseline).

Plain PyTorch and numpy only (Debian's python3-torch; no PyG, no DGL), on
the data gnnmpi reads: an OGB raw-layout directory (raw/edge.csv.gz,
node-feat.csv.gz, node-label.csv.gz, num-node-list.csv.gz,
split/<name>/{train,valid,test}.csv.gz; see graph/ogb.go), which is also what
`gnnmpi gen sbm --out DIR` and `gnnmpi convert --out DIR` write.

The model and training follow gnnmpi's (model/sage.go, model/model.go,
train/train.go, train/schedule.go, sampling/nodewise.go):

  * 2-layer GraphSAGE, mean aggregator, root weight:
    h_i = W_self·x_i + W_neigh·mean_{j∈N(i)} x_j + b, where N(i) are the
    entries of row i of the adjacency (edge "src,dst" puts dst in row src;
    repeated entries count once), Glorot-uniform weights, zero bias; ReLU
    between layers; dropout (rate 0.5) on the input of every layer in
    training; softmax cross-entropy averaged over the minibatch.
  * Adam (torch.optim.Adam: lr 0.01, weight decay 5e-4 added to the
    gradient, β 0.9/0.999, ε 1e-8).
  * Node-wise uniform sampling without replacement: for every frontier
    vertex min(degree, fanout) distinct neighbours, fanouts from the seeds
    outwards; DGL-style blocks (the destinations are the first sources, then
    the new vertices in order of first appearance).
  * Each epoch shuffles the training vertices and cuts them into
    ceil(n/batch) minibatches of near-equal size (gnnmpi's evenSplit).
  * Features row-normalised as gnnmpi's --feature-norm row does (each row
    divided by max(row sum, 1)); "auto" does that only when no feature is
    negative.
  * Evaluation: exact full-neighbour layer-wise inference over all vertices
    after the last epoch (and every --eval-every epochs), accuracy on the
    validation and test vertices.

--sparse-input picks the first layer's form for bag-of-words features,
the strongest a PyTorch user would write (gnnmpi's sparse first layer does
the same arithmetic: model/sparsein.go):

  * dense (default): the input rows gathered dense, x·W.
  * embedding_bag: the input rows as CSR (indices, offsets, values) and
    both projections by F.embedding_bag (mode "sum", per-sample weights)
    over the contiguous (in, out) weights: Z_neigh = X·W_neigh for every
    source row, Z_self = X[:nd]·W_self for the destinations, then
    h = Z_self + A_mean·Z_neigh + b (project first, then aggregate).
  * spmm: the same with X a sparse COO tensor and torch.sparse.mm.

With a sparse first layer the input dropout acts on the stored values
(the zeros stay zero either way), and inference projects every vertex's
row once per weight before the aggregation.

Prints one line per epoch (training time only: evaluation excluded) and at
the end one JSON line with the results (keys documented in the README of
bench/: see the `result` dict below).
"""

import argparse
import gzip
import json
import math
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import gnnfile  # beside this script: .gnn files


# ---------------------------------------------------------------- data


def find_table(raw, name):
    """Path of raw/name.csv.gz, or raw/name.csv; the compressed one wins."""
    for p in (os.path.join(raw, name + ".csv.gz"), os.path.join(raw, name + ".csv")):
        if os.path.exists(p):
            return p
    return None


def open_text(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_ints(path):
    """One integer a line (blank lines ignored)."""
    with open_text(path) as f:
        data = f.read()
    return np.array(data.split(), dtype=np.int64)


def read_edges(path, n):
    """'src,dst' lines as two int64 arrays."""
    with open_text(path) as f:
        data = f.read().replace(b",", b" ")
    e = np.array(data.split(), dtype=np.int64)
    if e.size % 2:
        sys.exit(f"{path}: odd number of fields: want 'src,dst' per line")
    e = e.reshape(-1, 2)
    if e.size and (e.min() < 0 or e.max() >= n):
        bad = int(np.nonzero((e < 0).any(1) | (e >= n).any(1))[0][0])
        sys.exit(f"{path}:{bad + 1}: vertex id outside [0, {n})")
    return e[:, 0], e[:, 1]


def read_features(path, n, chunk_bytes=64 << 20):
    """n lines of comma-separated numbers into an n×d float32 array, parsed
    in chunks of whole lines so that the text is never held twice."""
    feat = None
    row = 0
    rest = b""
    with open_text(path) as f:
        while True:
            buf = f.read(chunk_bytes)
            data = rest + buf
            if buf:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            else:
                rest = b""
            if data.strip():
                if feat is None:
                    d = data[: data.index(b"\n") if b"\n" in data else len(data)].count(b",") + 1
                    feat = np.empty((n, d), dtype=np.float32)
                lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
                vals = np.fromstring(data.replace(b"\n", b","), dtype=np.float32, sep=",")
                if vals.size != lines * d:
                    sys.exit(f"{path}: lines {row + 1}..{row + lines}: ragged rows or malformed numbers "
                             f"({vals.size} values for {lines} rows of {d})")
                if row + lines > n:
                    sys.exit(f"{path}:{n + 1}: more feature rows than the {n} nodes of num-node-list")
                feat[row:row + lines] = vals.reshape(lines, d)
                row += lines
            if not buf:
                break
    if row != n:
        sys.exit(f"{path}: {row} feature rows, but num-node-list declares {n} nodes")
    return feat


def load(data_dir, split):
    """The dataset of an OGB raw-layout directory, or of a gnnmpi .gnn file
    (gnnfile.py): CSR adjacency (indptr, indices; rows sorted, repeated
    entries removed), features, labels and the split's vertex ids."""
    if gnnfile.is_gnn(data_dir):
        return gnnfile.load(data_dir, split)
    raw = os.path.join(data_dir, "raw")
    p = find_table(raw, "num-node-list")
    if p is None:
        sys.exit(f"{raw}/num-node-list.csv.gz: missing file")
    n = int(read_ints(p)[0])
    src, dst = read_edges(find_table(raw, "edge"), n)
    # CSR with sorted, distinct columns per row (the sampler counts a
    # repeated entry once).
    key = np.unique(src * n + dst)
    src, dst = key // n, key % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    feat = read_features(find_table(raw, "node-feat"), n)
    labels = read_ints(find_table(raw, "node-label"))
    if labels.size != n:
        sys.exit(f"{find_table(raw, 'node-label')}: {labels.size} labels, but num-node-list declares {n} nodes")
    sdir = os.path.join(data_dir, "split")
    split = gnnfile.pick_split(sdir, sorted(os.listdir(sdir)) if os.path.isdir(sdir) else [], split)
    parts = {k: np.sort(read_ints(find_table(os.path.join(sdir, split), k))) for k in ("train", "valid", "test")}
    return indptr, dst, feat, labels, parts, split


def normalize_rows(feat, mode):
    """gnnmpi's --feature-norm: row divides each row by max(sum, 1)
    (dense.RowScale); auto does so only if no feature is negative."""
    if mode == "none" or (mode == "auto" and (feat < 0).any()):
        return False
    s = feat.sum(axis=1, dtype=np.float64)
    feat *= (1.0 / np.maximum(s, 1.0)).astype(np.float32)[:, None]
    return True


# ---------------------------------------------------------------- sampling


def sample_neighbors(indptr, indices, frontier, fanout, rng):
    """For every vertex of frontier, min(degree, fanout) distinct neighbours
    drawn uniformly without replacement (all of them for fanout < 0).
    Returns (row, col): row[k] indexes frontier, col[k] is a global id."""
    start = indptr[frontier]
    deg = indptr[frontier + 1] - start
    take = deg if fanout < 0 else np.minimum(deg, fanout)
    # Every entry of every frontier row, as (row, offset in row).
    row = np.repeat(np.arange(frontier.size), deg)
    pos = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
    big = take < deg
    if big.any():
        # Rows with more neighbours than the fanout keep the entries with
        # the smallest uniform keys: a uniform random subset of size
        # fanout. Keys are offset by the row so one argsort orders each
        # row's entries by key.
        keys = row + rng.random(row.size)
        order = np.argsort(keys, kind="stable")
        row, pos = row[order], pos[order]
        rank = np.arange(row.size) - np.repeat(np.cumsum(deg) - deg, deg)
        keep = rank < take[row]
        row, pos = row[keep], pos[keep]
    return row, indices[start[row] + pos]


def relabel(dst, row, col):
    """DGL-style block: sources are dst followed by the sampled vertices not
    in dst, in order of first appearance. Returns (src, local col)."""
    allv = np.concatenate([dst, col])
    uniq, first, inv = np.unique(allv, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    local = np.empty(uniq.size, dtype=np.int64)
    local[order] = np.arange(uniq.size)
    return uniq[order], local[inv[dst.size:]]


def mean_matrix(row, col, nd, ns):
    """The nd×ns sparse row-mean matrix (1/|N(i)| on each sampled entry)."""
    deg = np.bincount(row, minlength=nd).astype(np.float32)
    vals = 1.0 / deg[row]
    idx = torch.from_numpy(np.stack([row, col]))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(vals), (nd, ns)).coalesce()


def sample_blocks(indptr, indices, seeds, fanouts, rng):
    """The blocks of a minibatch, input layer first, and the input vertices."""
    blocks = []
    dst = seeds
    for fanout in fanouts:  # from the seeds outwards
        row, col = sample_neighbors(indptr, indices, dst, fanout, rng)
        src, lcol = relabel(dst, row, col)
        blocks.append(mean_matrix(row, lcol, dst.size, src.size))
        dst = src
    blocks.reverse()
    return blocks, dst


# ---------------------------------------------------------------- model


class SAGE(torch.nn.Module):
    """GraphSAGE mean layer: x_dst·W_self + (A_mean·x)·W_neigh + b."""

    def __init__(self, fin, fout):
        super().__init__()
        self.w_self = torch.nn.Parameter(torch.empty(fin, fout))
        self.w_neigh = torch.nn.Parameter(torch.empty(fin, fout))
        self.b = torch.nn.Parameter(torch.zeros(fout))
        torch.nn.init.xavier_uniform_(self.w_self)
        torch.nn.init.xavier_uniform_(self.w_neigh)

    def forward(self, a, x):
        nd = a.shape[0]
        agg = torch.sparse.mm(a, x)
        return torch.addmm(self.b, x[:nd], self.w_self) + agg @ self.w_neigh


    def project(self, rows, w, mode):
        """X·w for sparse rows X (a CSRRows), by mode embedding_bag or
        spmm."""
        if mode == "embedding_bag":
            return F.embedding_bag(rows.indices, w, rows.offsets, mode="sum", per_sample_weights=rows.values)
        x = torch.sparse_coo_tensor(torch.stack([rows.rows, rows.indices]), rows.values, (rows.n, w.shape[0]))
        return torch.sparse.mm(x, w)

    def forward_sparse(self, a, rows, mode):
        """The layer on sparse input rows, projecting first:
        X[:nd]·W_self + A·(X·W_neigh) + b."""
        nd = a.shape[0]
        zn = self.project(rows, self.w_neigh, mode)
        zs = self.project(rows.head(nd), self.w_self, mode)
        return torch.sparse.mm(a, zn) + zs + self.b


class CSRRows:
    """Sparse feature rows in CSR form: indices and values of the stored
    entries, offsets (each row's first entry) and rows (each entry's row),
    as int64/float32 tensors."""

    def __init__(self, indices, offsets, values, rows, n):
        self.indices, self.offsets, self.values, self.rows, self.n = indices, offsets, values, rows, n

    @staticmethod
    def gather(fptr, fidx, fval, ids, dev):
        """The rows ids of the CSR matrix (fptr, fidx, fval), on dev."""
        start = fptr[ids]
        ln = fptr[ids + 1] - start
        off = np.zeros(ids.size, dtype=np.int64)
        np.cumsum(ln[:-1], out=off[1:])
        src = np.repeat(start - off, ln) + np.arange(int(ln.sum()))
        t = lambda a: torch.from_numpy(a).to(dev, non_blocking=True)
        return CSRRows(t(fidx[src]), t(off), t(fval[src]), t(np.repeat(np.arange(ids.size), ln)), ids.size)

    def head(self, nd):
        """The first nd rows."""
        if nd == self.n:
            return self
        end = int(self.offsets[nd]) if nd < self.n else self.indices.numel()
        return CSRRows(self.indices[:end], self.offsets[:nd], self.values[:end], self.rows[:end], nd)

    def dropout(self, p, training):
        """The rows with dropout on the stored values."""
        return CSRRows(self.indices, self.offsets, F.dropout(self.values, p, training), self.rows, self.n)


def to_csr(feat):
    """The n×d dense array as CSR arrays (indptr, indices, values)."""
    row, col = np.nonzero(feat)
    indptr = np.zeros(feat.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=feat.shape[0]), out=indptr[1:])
    return indptr, col.astype(np.int64), feat[row, col].astype(np.float32)


class Model(torch.nn.Module):
    def __init__(self, fin, hidden, fout, layers, dropout, sparse="dense"):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [fout]
        self.layers = torch.nn.ModuleList(SAGE(dims[i], dims[i + 1]) for i in range(layers))
        self.dropout = dropout
        self.sparse = sparse

    def forward(self, blocks, x):
        """The logits; x is the dense input rows, or a CSRRows with a
        sparse first layer."""
        h = x
        for l, (layer, a) in enumerate(zip(self.layers, blocks)):
            if l == 0 and self.sparse != "dense":
                h = layer.forward_sparse(a, h.dropout(self.dropout, self.training), self.sparse)
            else:
                h = F.dropout(h, self.dropout, self.training)
                h = layer(a, h)
            if l < len(self.layers) - 1:
                h = F.relu(h)
        return h


@torch.no_grad()
def infer(model, indptr, indices, feat, chunk=4096):
    """Exact layer-wise full-neighbour inference: every layer over all
    vertices, destinations in chunks, on the model's device (feat is moved
    there whole; with a sparse first layer feat is the CSR arrays, and the
    first layer projects every row once per weight, in chunks)."""
    model.eval()
    dev = model.layers[0].b.device
    n = indptr.size - 1
    deg = np.diff(indptr)
    h = feat.to(dev) if model.sparse == "dense" else None
    for l, layer in enumerate(model.layers):
        out = torch.empty(n, layer.b.numel(), device=dev)
        zs = zn = None
        if h is None:  # the sparse first layer: Z = X·W for all rows
            zs, zn = torch.empty_like(out), torch.empty_like(out)
            for lo in range(0, n, chunk):
                rows = CSRRows.gather(*feat, np.arange(lo, min(lo + chunk, n)), dev)
                zs[lo:lo + rows.n] = layer.project(rows, layer.w_self, model.sparse)
                zn[lo:lo + rows.n] = layer.project(rows, layer.w_neigh, model.sparse)
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            row = np.repeat(np.arange(hi - lo), deg[lo:hi])
            col = indices[indptr[lo]:indptr[hi]]
            vals = (1.0 / np.maximum(deg[lo:hi], 1).astype(np.float32))[row]
            a = torch.sparse_coo_tensor(torch.from_numpy(np.stack([row, col])), torch.from_numpy(vals),
                                        (hi - lo, n)).coalesce().to(dev)
            if zn is not None:
                out[lo:hi] = zs[lo:hi] + torch.sparse.mm(a, zn) + layer.b
                continue
            agg = torch.sparse.mm(a, h)
            out[lo:hi] = torch.addmm(layer.b, h[lo:hi], layer.w_self) + agg @ layer.w_neigh
        if l < len(model.layers) - 1:
            out = F.relu(out)
        h = out
    return h


def evaluate(model, indptr, indices, feat, labels, parts):
    logits = infer(model, indptr, indices, feat)
    pred = logits.argmax(1).cpu().numpy()
    return {k: float((pred[parts[k]] == labels[parts[k]]).mean()) if parts[k].size else 0.0
            for k in ("valid", "test")}


# ---------------------------------------------------------------- training


def even_split(n, k):
    """Sizes of n items in k near-equal parts, the first n mod k one larger."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def add_common_args(ap):
    """The arguments both peers take (sage_pyg.py imports this): the data,
    the model and its training, the threads, the seed and the device."""
    ap.add_argument("--data", required=True, help="OGB raw-layout directory")
    ap.add_argument("--split", help="split name (default: the first)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--fanouts", default="15,10", help="from the seeds outwards")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--feature-norm", choices=("auto", "row", "none"), default="auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="cpu, or cuda: the model, the minibatch inputs and blocks, and inference on the GPU "
                         "(sampling stays on the CPU, as in gnnmpi); peak_device_bytes is reported")


def check_common_args(args):
    """Returns the fanouts and the torch device of add_common_args'
    arguments, exiting with a message when they do not fit."""
    fanouts = [int(f) for f in args.fanouts.split(",")]
    if len(fanouts) != args.layers:
        sys.exit(f"--fanouts {args.fanouts}: want one per layer ({args.layers})")
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device {args.device}: this PyTorch sees no CUDA device")
    return fanouts, dev


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--eval-every", type=int, default=0,
                    help="also evaluate every K epochs and report the test accuracy at the best validation accuracy")
    ap.add_argument("--sparse-input", choices=("dense", "embedding_bag", "spmm"), default="dense",
                    help="the first layer's form: dense rows, or CSR rows by F.embedding_bag or torch.sparse.mm")
    args = ap.parse_args()
    fanouts, dev = check_common_args(args)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    t0 = time.perf_counter()
    indptr, indices, feat, labels, parts, split = load(args.data, args.split)
    normed = normalize_rows(feat, args.feature_norm)
    fin = feat.shape[1]
    if args.sparse_input == "dense":
        feat = torch.from_numpy(feat)
        density = None
    else:
        feat = to_csr(feat)  # the dense copy is dropped
        density = feat[1].size / (feat[0].size - 1) / fin
    labels_t = torch.from_numpy(labels)
    labels_t = torch.from_numpy(labels)
    n, classes = indptr.size - 1, int(labels.max()) + 1
    load_s = time.perf_counter() - t0
    print(f"loaded {args.data} (split {split}) in {load_s:.2f}s: {n} vertices, {indices.size} edges, "
          f"{fin} features{' (row-normalised)' if normed else ''}"
          f"{f', CSR rows ({density:.2%} dense), first layer by {args.sparse_input}' if density is not None else ''}, "
          f"{classes} classes, "
          f"{parts['train'].size} training vertices; torch {torch.__version__}, {torch.get_num_threads()} threads",
          flush=True)

    model = Model(fin, args.hidden, classes, args.layers, args.dropout, args.sparse_input).to(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    train = parts["train"]
    nb = max(1, math.ceil(train.size / args.batch_size))
    epochs, phases = [], {"sample": [], "gather": [], "compute": []}
    best = None  # (val, test, epoch)
    ev = None
    eval_s = None  # the last evaluation's seconds
    for epoch in range(1, args.epochs + 1):
        model.train()
        ph = dict.fromkeys(phases, 0.0)
        loss_sum = correct = 0.0
        start = time.perf_counter()
        perm = rng.permutation(train)
        lo = 0
        for size in even_split(train.size, nb):
            t = time.perf_counter()
            seeds = np.sort(perm[lo:lo + size])
            lo += size
            blocks, inputs = sample_blocks(indptr, indices, seeds, fanouts, rng)
            blocks = [a.to(dev, non_blocking=True) for a in blocks]
            t1 = time.perf_counter()
            if args.sparse_input == "dense":
                x = feat.index_select(0, torch.from_numpy(inputs)).to(dev, non_blocking=True)
            else:
                x = CSRRows.gather(*feat, inputs, dev)
            y = labels_t[seeds].to(dev, non_blocking=True)
            t2 = time.perf_counter()
            opt.zero_grad()
            logits = model(blocks, x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * size  # .item() waits for the device: the step's time is complete
            correct += (logits.argmax(1) == y).sum().item()
            t3 = time.perf_counter()
            ph["sample"] += t1 - t
            ph["gather"] += t2 - t1
            ph["compute"] += t3 - t2
        secs = time.perf_counter() - start
        epochs.append(secs)
        for k in phases:
            phases[k].append(ph[k])
        line = (f"epoch {epoch:3d}  loss {loss_sum / train.size:.4f}  train {correct / train.size:.4f}  | {secs:.3f}s: "
                f"sample {ph['sample']:.3f} gather {ph['gather']:.3f} compute {ph['compute']:.3f}")
        if epoch == args.epochs or (args.eval_every > 0 and epoch % args.eval_every == 0):
            te = time.perf_counter()
            ev = evaluate(model, indptr, indices, feat, labels, parts)
            eval_s = time.perf_counter() - te
            line += f"  | val {ev['valid']:.4f} test {ev['test']:.4f} (eval {eval_s:.2f}s)"
            if best is None or ev["valid"] > best[0]:
                best = (ev["valid"], ev["test"], epoch)
        print(line, flush=True)

    result = {
        "system": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
        "sparse_input": args.sparse_input,
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "peak_device_bytes": torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else None,
        "data": args.data, "split": split, "epochs": args.epochs, "steps_per_epoch": nb,
        "fanouts": fanouts, "batch_size": args.batch_size, "hidden": args.hidden,
        "feature_norm": "row" if normed else "none",
        "epoch_s": statistics.median(epochs) if epochs else 0.0, "epochs_s": epochs,
        "phase_s": {k: statistics.median(v) if v else 0.0 for k, v in phases.items()},
        "test_acc": ev["test"] if ev else None, "val_acc": ev["valid"] if ev else None,
        "best_epoch": best[2] if best else None, "best_val_acc": best[0] if best else None,
        "best_test_acc": best[1] if best else None,
        "load_s": load_s, "eval_s": eval_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
