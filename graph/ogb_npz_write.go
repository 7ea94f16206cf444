package graph

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gnnmpi/npy"
)

// WriteOGBBinary writes d to dir in OGB's binary layout read by ReadOGB:
// raw/data.npz (edge_index as int64 sources then destinations, in d's
// storage order; num_nodes_list; num_edges_list; node_feat as float32,
// dense, when d has features), raw/node-label.npz (node_label as n×1
// float64, NaN for Unlabelled, when d has labels) and the splits as
// WriteOGB writes them. The archives' entries are deflated when compress,
// stored otherwise. d must be as WriteOGB requires; the whole edge array
// and feature matrix are built in memory.
func WriteOGBBinary(dir string, d *Dataset, compress bool) error {
	if err := checkOGBWritable(d); err != nil {
		return fmt.Errorf("%w (WriteOGBBinary)", err)
	}
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	n := d.NumNodes
	var m int64
	if d.Adj != nil {
		m = d.Adj.NNZ()
	}
	edges := make([]int64, 2*m)
	for i := range n {
		for k := d.Adj.Indptr[i]; k < d.Adj.Indptr[i+1]; k++ {
			edges[k], edges[m+k] = i, d.Adj.Indices[k]
		}
	}
	err := writeArchive(filepath.Join(raw, npzData), compress, func(aw *npy.ArchiveWriter) error {
		if err := npy.Add(aw, npzEdges, []int64{2, m}, edges); err != nil {
			return err
		}
		if d.HasFeatures() {
			dim := int64(d.NumFeatures())
			if err := npy.Add(aw, npzFeat, []int64{n, dim}, denseFeatureData(d)); err != nil {
				return err
			}
		}
		if err := npy.Add(aw, npzNodes, []int64{1}, []int64{n}); err != nil {
			return err
		}
		return npy.Add(aw, npzEdgeCounts, []int64{1}, []int64{m})
	})
	if err != nil {
		return err
	}
	labelPath := filepath.Join(raw, npzLabels)
	if d.Labels == nil {
		if err := os.Remove(labelPath); err != nil && !os.IsNotExist(err) {
			return err
		}
	} else {
		labels := make([]float64, n)
		for g, l := range d.Labels {
			labels[g] = float64(l)
			if l == Unlabelled {
				labels[g] = math.NaN()
			}
		}
		err := writeArchive(labelPath, compress, func(aw *npy.ArchiveWriter) error {
			return npy.Add(aw, npzLabel, []int64{n, 1}, labels)
		})
		if err != nil {
			return err
		}
	}
	return writeOGBSplits(filepath.Join(dir, "split"), d)
}

// writeArchive writes the .npz archive at path with the entries fill adds.
func writeArchive(path string, compress bool, fill func(aw *npy.ArchiveWriter) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	aw := npy.NewArchiveWriter(w, compress)
	err = fill(aw)
	if err == nil {
		err = aw.Close()
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("graph: writing %s: %w", path, err)
	}
	return nil
}

// denseFeatureData returns d's features as n×f float32s in row-major
// order: d.Feat's data, or d.FeatCSR's rows spread out (1 for a pattern).
func denseFeatureData(d *Dataset) []float32 {
	if d.Feat != nil {
		return d.Feat.Data
	}
	a := d.FeatCSR
	out := make([]float32, a.NRows*a.NCols)
	for i := range a.NRows {
		for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
			v := float32(1)
			if a.Values != nil {
				v = a.Values[k]
			}
			out[i*a.NCols+a.Indices[k]] = v
		}
	}
	return out
}
