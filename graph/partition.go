package graph

import (
	"fmt"
	"math"

	"gnnmpi/internal/rng"
	"gnnmpi/internal/sat"
	"gnnmpi/partition"
	"gnnmpi/partition/metis"
	"gnnmpi/sparse"
)

// The partition book and its file format live in package partition, which
// is pure Go; the partitioners here call METIS through package partition/metis.

// MetisPartition partitions the whole dataset d into parts with METIS k-way
// (package partition/metis), minimising the edge cut of its adjacency made
// symmetric and free of self-loops. Method is "metis".
//
// When split names one of d.Splits, the partition balances four constraints
// at once, as SALIENT++ does: vertex count and the numbers of train, valid
// and test vertices of that split (each within METIS's default 3%, up to
// granularity; empty sets are left out). With split "" it balances vertex
// count only. seed seeds METIS.
//
// MetisPartition returns an error if d holds only some rows (Rows != nil) or
// no adjacency, if the split does not exist, if parts < 1, or if METIS fails
// (wrapping the partition/metis error).
func MetisPartition(d *Dataset, parts int, split string, seed int) (*partition.Book, error) {
	return MetisPartitionOpts(d, parts, MetisOptions{Split: split, Seed: seed})
}

// MetisOptions are MetisPartitionOpts' settings.
type MetisOptions struct {
	// Split names the split whose train, valid and test vertices each part
	// gets its share of ("": vertices only).
	Split string
	// Edges adds a constraint that balances the parts' stored edges (each
	// vertex weighs its row's length): on a power-law graph, where a few
	// hubs hold many of the edges, balancing vertices alone can leave one
	// part with most of the adjacency.
	Edges bool
	// Seed seeds METIS.
	Seed int
	// Fits, if not nil, is called before anything is allocated for METIS
	// with MetisBytes of the graph (its symmetric entries counted, not
	// built), and its error is returned: the caller compares the estimate
	// with what the process may still allocate, so that a graph too large
	// to partition here fails with a message instead of the kernel's kill.
	Fits func(need int64) error
}

// MetisBytes estimates the memory MetisPartitionOpts allocates at its
// peak for a graph of n vertices whose adjacency made symmetric has m
// stored entries, with ncon constraints: the symmetric copy (8 bytes per
// vertex and entry) held while METIS runs on its 32-bit conversion with
// the vertex weights (12·ncon bytes per vertex), plus METIS's own graphs
// and buffers, about 1,100 bytes per vertex and 56 per entry. With the
// resident memory before it, that made 1.22× and 1.23× the peak RSS that
// Debian's METIS 5.1 reached on a papers-like graph (1 M vertices, 30 M
// symmetric entries, 4 constraints: 2.85 GB) and a stochastic block model
// (1 M, 20 M: 2.15 GB), and 1.70× on coauthor-physics (55 MB);
// bench/results/metis-memory.csv.
func MetisBytes(n, m int64, ncon int) int64 {
	return sat.Add(sat.Mul(n, 1108+12*int64(max(ncon, 1))), sat.Mul(m, 64))
}

// symmetricEntries returns the stored entries of d's adjacency made
// symmetric (Symmetrize), counted without building it: those of a
// symmetric graph as they are, else twice the entries less the
// reciprocated ones (Reciprocity), which counts a repeated entry twice.
func symmetricEntries(d *Dataset) int64 {
	if d.Symmetric {
		return d.Adj.NNZ()
	}
	found, edges := Reciprocity(d.Adj)
	return 2*edges - found
}

// MetisPartitionOpts is MetisPartition with options: the constraints are
// the vertex count, the split's sets (o.Split) and, with o.Edges, the
// stored edges.
func MetisPartitionOpts(d *Dataset, parts int, o MetisOptions) (*partition.Book, error) {
	split, seed := o.Split, o.Seed
	if d.Rows != nil {
		return nil, fmt.Errorf("graph: MetisPartition needs the whole graph, dataset %s holds %d of %d rows", d.Name, len(d.Rows), d.NumNodes)
	}
	if d.Adj == nil {
		return nil, fmt.Errorf("graph: MetisPartition: dataset %s has no adjacency", d.Name)
	}
	n := d.NumNodes
	if d.Adj.NRows != n || d.Adj.NCols != n {
		return nil, fmt.Errorf("graph: MetisPartition: adjacency is %d×%d, want %d×%d", d.Adj.NRows, d.Adj.NCols, n, n)
	}
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("graph: MetisPartition into %d parts", parts)
	}

	// Vertex weights: (1, isTrain, isValid, isTest, degree), keeping
	// non-empty sets and the degree with o.Edges.
	sets := [][]int64{nil}
	if split != "" {
		s, ok := d.Splits[split]
		if !ok {
			return nil, fmt.Errorf("graph: MetisPartition: dataset %s has no split %q (have %v)", d.Name, split, d.SplitNames())
		}
		for _, set := range [][]int64{s.Train, s.Valid, s.Test} {
			if len(set) > 0 {
				sets = append(sets, set)
			}
		}
	}
	ncon := len(sets)
	if o.Edges {
		ncon++
	}
	if o.Fits != nil {
		if err := o.Fits(MetisBytes(n, symmetricEntries(d), ncon)); err != nil {
			return nil, err
		}
	}
	var vwgt []int64
	if ncon > 1 {
		vwgt = make([]int64, n*int64(ncon))
		for v := range n {
			vwgt[v*int64(ncon)] = 1
			if o.Edges {
				vwgt[v*int64(ncon)+int64(ncon-1)] = d.Adj.Degree(v)
			}
		}
		for c, set := range sets[1:] {
			for _, v := range set {
				if v < 0 || v >= n {
					return nil, fmt.Errorf("graph: MetisPartition: split %s has vertex %d outside [0,%d)", split, v, n)
				}
				vwgt[v*int64(ncon)+int64(c+1)] = 1
			}
		}
	}

	// METIS needs both directions of every edge; it ignores self-loops.
	sym := Symmetrize(d.Adj)
	part, _, err := metis.PartGraph(sym.Indptr, sym.Indices, vwgt, ncon, parts, metis.Options{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("graph: METIS partition of %s into %d parts: %w", d.Name, parts, err)
	}
	return partition.New(part, parts, string(partition.MethodMetis))
}

// genStreamSubRandom is the stream id of SubPartition's random chunks.
const genStreamSubRandom = 102

// SubPartition splits every part of book into k chunks and returns each
// vertex's chunk, in [0, k): GNNPipe's chunks, which flow through a pipeline
// one after another. With method "metis" each part's induced subgraph (made
// symmetric, without self-loops, edges to other parts dropped) is split by
// METIS k-way with the given seed, so that few edges join chunks; with
// "random" the part's vertices are dealt to the chunks in a seeded random
// order (sizes differ by at most one). adj is the whole graph, n×n.
//
// It returns an error if k < 1, if a part has fewer than k vertices, if
// method is unknown or if METIS fails.
func SubPartition(adj *sparse.CSR, book *partition.Book, k int, method partition.Method, seed int) ([]int32, error) {
	n := book.NumNodes()
	if adj.NRows != n || adj.NCols != n {
		return nil, fmt.Errorf("graph: SubPartition: adjacency is %d×%d for a book of %d vertices", adj.NRows, adj.NCols, n)
	}
	if k < 1 || k > math.MaxInt32 {
		return nil, fmt.Errorf("graph: SubPartition into %d chunks", k)
	}
	if method != partition.MethodMetis && method != partition.MethodRandom {
		return nil, fmt.Errorf("graph: SubPartition method %q; want metis or random", method)
	}
	chunk := make([]int32, n)
	sym := adj
	if method == partition.MethodMetis {
		sym = Symmetrize(adj)
	}
	for r := range book.Parts {
		own := book.Owned(r)
		if len(own) < k {
			return nil, fmt.Errorf("graph: part %d has %d vertices, fewer than %d chunks", r, len(own), k)
		}
		if k == 1 {
			continue
		}
		if method == partition.MethodRandom {
			rnd := rng.New(uint64(seed), genStreamSubRandom, uint64(r))
			perm := rnd.Perm(len(own))
			for i, j := range perm {
				chunk[own[j]] = int32(i % k)
			}
			continue
		}
		// The part's induced subgraph in local ids (own is ascending, so
		// local id = position in own = book.LocalID).
		xadj := make([]int64, len(own)+1)
		var adjncy []int64
		for i, gid := range own {
			for _, j := range sym.Row(gid) {
				if j != gid && book.Owner(j) == r {
					adjncy = append(adjncy, book.LocalID(j))
				}
			}
			xadj[i+1] = int64(len(adjncy))
		}
		part, _, err := metis.PartGraph(xadj, adjncy, nil, 1, k, metis.Options{Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("graph: METIS split of part %d into %d chunks: %w", r, k, err)
		}
		for i, gid := range own {
			chunk[gid] = part[i]
		}
	}
	return chunk, nil
}
