#!/usr/bin/python3
"""bench/peers/sage_pyg.py: PyG's GraphSAGE on the data gnnmpi reads, the
peer a PyG user would write: torch_geometric's NeighborLoader and SAGEConv
(mean aggregation, root weight), on the CPU or a GPU.

The data, the normalisation, the model's shape and the optimiser are
sage_torch.py's (its loader is reused): 2 SAGEConv layers of --hidden, ReLU,
dropout on every layer's input, Adam with L2 decay, --fanouts neighbours per
hop from the seeds outwards, --batch-size seeds per minibatch. A vertex's
neighbours are the entries of its adjacency row (edge "src,dst" puts dst in
row src), so PyG's edge_index carries each entry as the message dst → src.
Evaluation is one full-graph forward pass on the device (exact, as
gnnmpi's layer-wise inference), after the last epoch.

Prints one line per epoch (training time only) and ends with one JSON line
with sage_torch.py's keys (system "pyg"), and peak_device_bytes on a GPU.
"""

import argparse
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sage_torch import add_common_args, check_common_args, load, normalize_rows  # noqa: E402

try:
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv
except ImportError as e:  # the caller skips this peer
    sys.exit(f"sage_pyg.py: torch_geometric is not importable: {e}")


class Model(torch.nn.Module):
    def __init__(self, fin, hidden, fout, layers, dropout):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [fout]
        self.convs = torch.nn.ModuleList(SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(layers))
        self.dropout = dropout

    def forward(self, x, edge_index):
        for l, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, edge_index)
            if l < len(self.convs) - 1:
                x = F.relu(x)
        return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--workers", type=int, default=0, help="NeighborLoader worker processes")
    args = ap.parse_args()
    fanouts, dev = check_common_args(args)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    indptr, indices, feat, labels, parts, split = load(args.data, args.split)
    normed = normalize_rows(feat, args.feature_norm)
    n, classes = indptr.size - 1, int(labels.max()) + 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    # Messages flow source → target; row i aggregates its entries: j → i.
    edge_index = torch.from_numpy(np.stack([indices, rows]))
    data = Data(x=torch.from_numpy(feat), edge_index=edge_index, y=torch.from_numpy(labels), num_nodes=n)
    load_s = time.perf_counter() - t0
    print(f"loaded {args.data} (split {split}) in {load_s:.2f}s: {n} vertices, {indices.size} edges; "
          f"torch {torch.__version__}, device {args.device}", flush=True)

    train = torch.from_numpy(parts["train"])
    loader = NeighborLoader(data, num_neighbors=fanouts, batch_size=args.batch_size, input_nodes=train,
                            shuffle=True, num_workers=args.workers)
    model = Model(feat.shape[1], args.hidden, classes, args.layers, args.dropout).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    epochs = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        loss_sum = correct = seen = 0.0
        for batch in loader:
            batch = batch.to(dev, non_blocking=True)
            size = batch.batch_size
            opt.zero_grad()
            logits = model(batch.x, batch.edge_index)[:size]
            y = batch.y[:size]
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * size
            correct += (logits.argmax(1) == y).sum().item()
            seen += size
        secs = time.perf_counter() - start
        epochs.append(secs)
        print(f"epoch {epoch:3d}  loss {loss_sum / seen:.4f}  train {correct / seen:.4f}  | {secs:.3f}s", flush=True)

    te = time.perf_counter()
    model.eval()
    with torch.no_grad():
        pred = model(data.x.to(dev), data.edge_index.to(dev)).argmax(1).cpu().numpy()
    ev = {k: float((pred[parts[k]] == labels[parts[k]]).mean()) if parts[k].size else 0.0 for k in ("valid", "test")}
    print(f"val {ev['valid']:.4f} test {ev['test']:.4f} (eval {time.perf_counter() - te:.2f}s)", flush=True)
    result = {
        "system": "pyg", "torch": torch.__version__, "threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "data": args.data, "split": split, "epochs": args.epochs,
        "steps_per_epoch": math.ceil(train.numel() / args.batch_size),
        "fanouts": fanouts, "batch_size": args.batch_size, "hidden": args.hidden,
        "feature_norm": "row" if normed else "none",
        "epoch_s": statistics.median(epochs) if epochs else 0.0, "epochs_s": epochs,
        "test_acc": ev["test"], "val_acc": ev["valid"], "load_s": load_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_device_bytes": torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else None,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
