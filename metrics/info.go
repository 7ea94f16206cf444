package metrics

// DatasetInfo is the summary of a dataset, as `gnnmpi info` prints it
// (graph.Info, filled by graph.DistInfo and graph.Describe).
type DatasetInfo struct {
	Path     string `json:"path"`
	Name     string `json:"name"`
	Nodes    int64  `json:"nodes"`
	Edges    int64  `json:"edges"`
	Features int    `json:"features"`
	// FeatureFormat is how the features were loaded (dense or csr; empty
	// without features), Density the fraction of nonzero feature entries
	// over the whole graph and FeatureNNZ their number.
	FeatureFormat string           `json:"feature_format"`
	Density       float64          `json:"feature_density"`
	FeatureNNZ    int64            `json:"feature_nnz"`
	Classes       int              `json:"classes"`
	Splits        map[string][]int `json:"splits"` // name → train, valid, test sizes
	MinDegree     int64            `json:"min_degree"`
	MaxDegree     int64            `json:"max_degree"`
	MeanDegree    float64          `json:"mean_degree"`
	StdDegree     float64          `json:"std_degree"`
	Isolated      int64            `json:"isolated"`
	SelfLoops     int64            `json:"self_loops"`
	RowsPerRank   []int64          `json:"rows_per_rank"`
	LoadSeconds   float64          `json:"load_seconds_max"`
	// Reciprocity is the fraction of edges whose reverse edge is in the
	// graph (1 when symmetrized or recorded as symmetric).
	Reciprocity  float64 `json:"reciprocity"`
	Symmetrized  bool    `json:"symmetrized"`
	EmptyClasses []int   `json:"empty_classes"` // classes below Classes without a vertex
	// Labelled is the number of vertices with a class in [0, Classes),
	// Unlabelled the others (graph.Unlabelled: NaN in OGB's binary
	// layout, "nan" in its csv layout; every vertex of a dataset without
	// labels).
	Labelled   int64 `json:"labelled"`
	Unlabelled int64 `json:"unlabelled"`
}

// Info is the final record of gnnmpi info.
type Info struct {
	Run
	Dataset DatasetInfo `json:"dataset"`
	// Parts is the manifest (graph.PartManifest, as its manifest.json
	// spells it) of a partitioned dataset; absent for any other.
	Parts any `json:"parts,omitempty"`
	// GPU is present with --gpu.
	GPU *GPUBinding `json:"gpu,omitempty"`
}

// GPUBinding is the GPUs rank 0 sees on its node and the one it binds
// to, as `gnnmpi info --gpu` reports them.
type GPUBinding struct {
	LocalRank int `json:"local_rank"` // rank 0's rank among the ranks of its node
	LocalSize int `json:"local_size"` // ranks on the node
	// Error is why discovery failed; Devices and Bound are then absent.
	Error   string      `json:"error,omitempty"`
	Devices []GPUDevice `json:"devices,omitempty"`
	Bound   *int        `json:"bound,omitempty"` // the Index of the bound device
}

// GPUDevice is one GPU. Its fields are those of gpu.Device, in order,
// and keep their Go names as JSON keys.
type GPUDevice struct {
	Index                   int
	Name                    string
	UUID                    string
	MemoryTotal, MemoryFree uint64
	PCIBusID                string
}

// Selftest is the final record of gnnmpi selftest.
type Selftest struct {
	Run
	Cases  map[string]string `json:"cases"` // case name → "pass", "fail" or "skip"
	Failed int               `json:"failed"`
}
