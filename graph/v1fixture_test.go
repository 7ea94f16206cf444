package graph

import (
	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// v1Fixture is the dataset stored in testdata/v1.gnn, written by the
// version-1 writer (before sparse feature sections existed): a weighted
// 5-vertex graph with dense features, labels and one split.
func v1Fixture() *Dataset {
	return &Dataset{
		Name:     "v1",
		NumNodes: 5,
		Adj: &sparse.CSR{NRows: 5, NCols: 5, Indptr: []int64{0, 2, 3, 5, 6, 7},
			Indices: []int64{1, 4, 0, 1, 3, 2, 0}, Values: []float64{1, 0.5, 2, 1, 3, 1, 0.25}},
		Feat: &dense.Matrix{Rows: 5, Cols: 3, Data: []float32{
			1, 0, 0,
			0, 0.5, 0,
			0, 0, 0,
			2, 0, -1,
			0, 1, 1}},
		Labels:     []int32{0, 1, 1, 0, 2},
		NumClasses: 3,
		Splits:     map[string]Split{"s": {Train: []int64{0, 1}, Valid: []int64{2}, Test: []int64{3, 4}}},
	}
}
