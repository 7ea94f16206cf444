package graph

import (
	"fmt"
	"strings"

	"gnnmpi/internal/enum"
)

// Generator names a generator of Generate.
type Generator string

// The generators.
const (
	GenRMAT Generator = "rmat" // RMAT, with Planted labels and features when Features > 0
	GenSBM  Generator = "sbm"  // SBM
)

// Generators lists the generators in the order help texts name them.
var Generators = []Generator{GenRMAT, GenSBM}

// ParseGenerator returns the generator named s.
func ParseGenerator(s string) (Generator, error) {
	return enum.Parse("graph", "generator", s, Generators...)
}

// GenOptions are the settings of Generate. A zero (or, for Homophily,
// TrainFrac and ValidFrac, negative) value keeps the generator's default
// (DefaultRMAT, DefaultSBM).
type GenOptions struct {
	Scale, EdgeFactor int   // rmat: log2 of the vertices; edges per vertex before symmetrization
	Directed          bool  // rmat: keep the generated direction
	Nodes             int64 // sbm: vertices
	// Classes, Features, TrainFrac and ValidFrac set the planted labels,
	// features and split: sbm's, or rmat's when Features > 0 (none
	// otherwise).
	Classes, Features    int
	TrainFrac, ValidFrac float64
	Degree, Homophily    float64 // sbm: mean degree, fraction of a vertex's edges within its class
	Seed                 uint64
	// Progress, if not nil, is told what is being generated.
	Progress func(format string, args ...any)
}

// Generate returns a graph from the generator kind: GenRMAT (RMAT, named
// rmat-sSCALE-eEDGEFACTOR, with Planted labels and features when
// o.Features > 0) or GenSBM (SBM).
func Generate(kind Generator, o GenOptions) (*Dataset, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	switch kind {
	case GenRMAT:
		p := DefaultRMAT(o.Scale, o.EdgeFactor)
		p.Seed, p.Directed = o.Seed, o.Directed
		progress("generating R-MAT scale %d, edge factor %d", o.Scale, o.EdgeFactor)
		adj, err := RMAT(p)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("rmat-s%d-e%d", o.Scale, o.EdgeFactor)
		if o.Features <= 0 {
			return &Dataset{Name: name, NumNodes: adj.NRows, Adj: adj}, nil
		}
		sp := o.planted(DefaultSBM(adj.NRows))
		progress("adding planted labels (%d classes) and %d features", sp.Classes, sp.Features)
		return Planted(name, adj, sp)
	case GenSBM:
		p := o.planted(DefaultSBM(o.Nodes))
		if o.Degree > 0 {
			p.AvgDegree = o.Degree
		}
		if o.Homophily >= 0 {
			p.Homophily = o.Homophily
		}
		progress("generating SBM with %d vertices", o.Nodes)
		return SBM(p)
	}
	return nil, fmt.Errorf("%w: unknown generator %q (want %s)", ErrGenParams, kind, enum.Or(Generators))
}

// planted returns p with o's classes, features, split fractions and seed
// applied (0 or −1: keep p's).
func (o GenOptions) planted(p SBMParams) SBMParams {
	p.Seed = o.Seed
	if o.Classes > 0 {
		p.Classes = o.Classes
	}
	if o.Features > 0 {
		p.Features = o.Features
	}
	if o.TrainFrac >= 0 {
		p.TrainFrac = o.TrainFrac
	}
	if o.ValidFrac >= 0 {
		p.ValidFrac = o.ValidFrac
	}
	return p
}

// Write writes d as binary (WriteBinary) when path ends in .gnn, as a
// Matrix Market adjacency (WriteMatrixMarket: topology only, features,
// labels and splits are not written) when it ends in .mtx or .mtx.gz,
// else as an OGB raw-layout directory (WriteOGB).
func Write(path string, d *Dataset) error {
	switch {
	case strings.HasSuffix(path, ".gnn"):
		return WriteBinary(path, d)
	case strings.HasSuffix(path, ".mtx"), strings.HasSuffix(path, ".mtx.gz"):
		return WriteMatrixMarket(path, d.Adj)
	}
	return WriteOGB(path, d)
}
