package graph

import (
	"fmt"
	"math"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// Info is the summary of a dataset, as `gnnmpi info` prints it: the
// metrics record, whose keys package metrics spells.
type Info = metrics.DatasetInfo

// DistInfo returns the statistics of the dataset whose rows d holds on
// each rank (loaded from path in load seconds): degree statistics of the
// rows over all ranks, sizes, rows per rank and the slowest load.
//
// DistInfo is collective over c: it sends five Allreduces of a few
// int64 or float64 and one Allgather of one int64. Reciprocity,
// Symmetrized, Splits and EmptyClasses are left to the caller.
func DistInfo(c collective.Comm, d *Dataset, path string, load float64) (Info, error) {
	held := int64(len(d.Rows))
	if d.Rows == nil {
		held = d.NumNodes
	}
	var edges, selfLoops, isolated int64
	nnz := d.FeatureNNZ()
	var sumSq float64
	minDeg, maxDeg := int64(math.MaxInt64), int64(0)
	for i := int64(0); i < held; i++ {
		deg := d.Adj.Degree(i)
		g := i
		if d.Rows != nil {
			g = d.Rows[i]
		}
		edges += deg
		sumSq += float64(deg) * float64(deg)
		minDeg, maxDeg = min(minDeg, deg), max(maxDeg, deg)
		if deg == 0 {
			isolated++
		}
		for _, j := range d.Adj.Row(i) {
			if j == g {
				selfLoops++
			}
		}
	}
	total := held // rows over all ranks
	if err := collective.AllreduceVars(c, collective.Sum, &edges, &selfLoops, &isolated, &total, &nnz); err != nil {
		return Info{}, err
	}
	// Minima as maxima of negations: one Allreduce for all.
	negMinDeg, features, classes, nodes, negNodes := -minDeg, int64(d.NumFeatures()), int64(d.NumClasses), d.NumNodes, -d.NumNodes
	if err := collective.AllreduceVars(c, collective.Max, &maxDeg, &negMinDeg, &features, &classes, &nodes, &negNodes); err != nil {
		return Info{}, err
	}
	if err := collective.AllreduceVars(c, collective.Sum, &sumSq); err != nil {
		return Info{}, err
	}
	if err := collective.AllreduceVars(c, collective.Max, &load); err != nil {
		return Info{}, err
	}
	rows, _, err := collective.AllgatherSlice(c, []int64{held})
	if err != nil {
		return Info{}, err
	}
	if nodes != -negNodes {
		return Info{}, fmt.Errorf("info: ranks disagree on the number of vertices of %s", path)
	}
	n := nodes
	if total != n {
		return Info{}, fmt.Errorf("info: ranks hold %d rows of %d vertices", total, n)
	}
	mean := float64(edges) / float64(max(n, 1))
	in := Info{
		Path: path, Name: d.Name, Nodes: n, Edges: edges, Features: int(features), Classes: int(classes),
		Splits: map[string][]int{}, MinDegree: -negMinDeg, MaxDegree: maxDeg, MeanDegree: mean,
		StdDegree: math.Sqrt(math.Max(sumSq/float64(max(n, 1))-mean*mean, 0)),
		Isolated:  isolated, SelfLoops: selfLoops, RowsPerRank: rows, LoadSeconds: load,
	}
	if n == 0 {
		in.MinDegree = 0
	}
	if features > 0 {
		in.FeatureFormat, in.FeatureNNZ = string(d.FeatureFormat()), nnz
		in.Density = float64(nnz) / (float64(n) * float64(features))
	}
	return in, nil
}
