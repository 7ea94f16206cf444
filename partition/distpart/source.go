package distpart

import (
	"fmt"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// Source is a dataset read in row blocks, what Partition and WriteParts
// read: *graph.BinaryRows (a binary .gnn file) or *OGB (OGB's binary
// layout, whose edges the ranks exchange when it is opened). Rows,
// Labels, SplitMembers and Features are called with this rank's block,
// dist.BlockRange(NumNodes(), p, rank).
type Source interface {
	// Name returns the dataset's name and Path where it was read from.
	Name() string
	Path() string
	// NumNodes returns the number of vertices n.
	NumNodes() int64
	// Symmetric reports whether every edge's reverse is stored too, and
	// Weighted whether the edges have values.
	Symmetric() bool
	Weighted() bool
	// NumFeatures returns the feature dimension, 0 without features;
	// HasLabels whether there are labels, and NumClasses how many
	// classes (0 without labels).
	NumFeatures() int
	HasLabels() bool
	NumClasses() int
	// SplitSizes returns the sizes of the whole splits.
	SplitSizes() []graph.SplitSizes
	// Rows returns rows [lo, hi) of the adjacency with global column ids.
	Rows(lo, hi int64) (*sparse.CSR, error)
	// Labels returns the labels of rows [lo, hi), nil without labels.
	Labels(lo, hi int64) ([]int32, error)
	// SplitMembers returns every split's members in [lo, hi), ascending.
	SplitMembers(lo, hi int64) (map[string]graph.Split, error)
	// Features returns the feature rows [lo, hi), nil without features.
	Features(lo, hi int64) (*graph.FeatureBlock, error)
}

var (
	_ Source      = (*graph.BinaryRows)(nil)
	_ Source      = (*OGB)(nil)
	_ RowFeatures = (*OGB)(nil)
)

// OGB is a dataset in OGB's binary layout (graph.OpenOGBRows) spread over
// the ranks of a communicator in row blocks, as a Source: OpenOGB reads
// this rank's slice of the edges and sends each edge to the rank owning
// its source's row, and reads the labels and split members of this
// rank's rows; Features reads this rank's feature rows when asked. No
// rank holds the whole edge array or feature matrix.
type OGB struct {
	r          *graph.OGBRows
	lo, hi     int64
	adj        *sparse.CSR
	symmetric  bool
	labels     []int32
	numClasses int
	splits     map[string]graph.Split
	sizes      []graph.SplitSizes
}

// OGBOptions configure OpenOGB.
type OGBOptions struct {
	// Symmetrize adds every edge's reverse.
	Symmetrize bool
	// RoundEdges is how many of its edges a rank reads and sends in one
	// round; 0 means DefaultRoundEdges.
	RoundEdges int64
	// Progress, when not nil, is called on every rank with a line about
	// rank 0's rounds.
	Progress func(format string, args ...any)
}

// DefaultRoundEdges is OGBOptions.RoundEdges's default: a round's pairs
// take 16 MiB (32 MiB symmetrized) to send, as many to receive.
const DefaultRoundEdges = 1 << 20

// OpenOGB opens the OGB binary layout in dir on every rank of c and
// builds this rank's block of rows, rows dist.BlockRange(n, p, rank): rank
// r reads edges dist.BlockRange(E, p, r) of edge_index, with their
// reverses when o.Symmetrize, and sends each to the owner of its source's
// row, in rounds of o.RoundEdges edges and two passes over them: the
// first sends the rows alone (one Alltoallv of an int64 an edge a round),
// for each owner to count its rows' entries; the second sends (row,
// column) pairs (an Alltoallv of two int64s an edge a round), which the
// owner puts in place (dist.RowBuilder). Each rank's rows are then sorted
// by column and hold no repeated column (as graph.Dedupe, or
// graph.Symmetrize when symmetrizing). It reads the labels and split
// members of this rank's rows, and finds the class count with one scalar
// Allreduce.
//
// A rank holds its rows' CSR (8 bytes an entry received, 24 a row), its
// rows' labels, a round's edges to send and those it receives (16 bytes
// an edge each, twice symmetrized, reused from round to round) and chunks
// of at most 512 KiB of the edge array: O(E/p + n/p) bytes in all, only
// the CSR growing with E, when the edges are spread evenly over the rows'
// blocks. The edge array is read twice. An error on any rank fails every
// rank. OpenOGB is collective over c. The caller closes it.
func OpenOGB(c collective.Comm, dir string, o OGBOptions) (*OGB, error) {
	r, err := graph.OpenOGBRows(dir)
	if err = collective.Agree(c, err); err != nil {
		if r != nil {
			r.Close()
		}
		return nil, err
	}
	g := &OGB{r: r, symmetric: o.Symmetrize}
	if err := g.load(c, o); err != nil {
		r.Close()
		return nil, err
	}
	return g, nil
}

// load builds g's block of rows, labels and splits.
func (g *OGB) load(c collective.Comm, o OGBOptions) error {
	p, rank := c.Size(), c.Rank()
	n, m := g.r.NumNodes(), g.r.NumEdges()
	g.lo, g.hi = dist.BlockRange(n, p, rank)
	bounds := make([]int64, p+1)
	for q := range p {
		bounds[q], bounds[q+1] = dist.BlockRange(n, p, q)
	}
	elo, ehi := dist.BlockRange(m, p, rank)
	round := o.RoundEdges
	if round <= 0 {
		round = DefaultRoundEdges
	}
	// Every rank makes as many rounds as the largest slice needs, so that
	// the collectives match; a rank past its slice sends nothing.
	_, most := dist.BlockRange(m, p, 0)
	rounds := (most + round - 1) / round
	per := int64(2)
	if o.Symmetrize {
		per = 4
	}
	pairs := make([]int64, 0, per*min(round, max(ehi-elo, 1)))
	var rows, recv []int64
	counts := make([]int, p)
	b := dist.NewRowBuilder(g.lo, g.hi, n)
	for pass := range 2 {
		done := int64(0)
		// flush sends the pairs read (the rows alone in the first pass)
		// to their rows' owners, after the ranks agree on readErr.
		flush := func(readErr error) error {
			if err := collective.Agree(c, readErr); err != nil {
				return err
			}
			copy(counts, sortByOwner(pairs, bounds))
			send := pairs
			if pass == 0 { // the rows alone
				rows = slices.Grow(rows[:0], len(pairs)/2)[:len(pairs)/2]
				for e := range rows {
					rows[e] = pairs[2*e]
				}
				for q := range counts {
					counts[q] /= 2
				}
				send = rows
			}
			recvCounts, err := collective.AlltoallCounts(c, counts)
			if err != nil {
				return err
			}
			total := 0
			for _, v := range recvCounts {
				total += v
			}
			recv = slices.Grow(recv[:0], total)[:total]
			if err := c.Alltoallv(collective.BufOf(send), counts, collective.BufOf(recv), recvCounts); err != nil {
				return err
			}
			if pass == 0 {
				b.Count(recv, 1)
			} else {
				b.Place(recv)
			}
			pairs = pairs[:0]
			done++
			if o.Progress != nil && (done%16 == 0 || done == rounds) {
				o.Progress("ingest: pass %d of 2, round %d of %d (%d edges a rank a round)", pass+1, done, rounds, round)
			}
			return nil
		}
		// One pass over the slice (a deflated edge_index is streamed once
		// a pass), flushing every round's edges; a rank whose slice
		// needs fewer rounds makes the rest empty.
		var flushErr error
		readErr := g.r.EdgeChunks(elo, ehi, func(src, dst []int64) error {
			for i, s := range src {
				pairs = append(pairs, s, dst[i])
				if o.Symmetrize {
					pairs = append(pairs, dst[i], s)
				}
				if int64(len(pairs)) == per*round {
					if flushErr = flush(nil); flushErr != nil {
						return flushErr
					}
				}
			}
			return nil
		})
		if flushErr != nil {
			return flushErr
		}
		for done < rounds {
			if err := flush(readErr); err != nil {
				return err
			}
			readErr = nil
		}
		if err := collective.Agree(c, readErr); err != nil {
			return err
		}
		if pass == 0 {
			rows = nil
			b.Alloc()
		}
	}
	pairs, recv = nil, nil
	g.adj = b.Finish(false)

	var err error
	g.labels, err = g.r.Labels(g.lo, g.hi)
	if err == nil {
		g.splits, g.sizes, err = g.r.SplitMembers(g.lo, g.hi, g.labels)
	}
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	maxLabel := int64(-1)
	for _, l := range g.labels {
		maxLabel = max(maxLabel, int64(l))
	}
	if maxLabel, err = collective.AllreduceScalar(c, maxLabel, collective.Max); err != nil {
		return err
	}
	if g.r.HasLabels() {
		g.numClasses = int(maxLabel + 1)
	}
	return nil
}

// IngestBytes estimates the most a rank of p holds while OpenOGB reads a
// graph of n vertices and edges stored edges (twice as many entries when
// symmetrize) and WriteParts writes it in parts parts: its rows' CSR (8
// bytes an entry, 24 a row), the CSR of the parts it writes (8 bytes an
// entry, 24 a row with their original ids), a round's buffers of both,
// and dim features a row: a chunk of them when streamed (the source is
// RowFeatures), else the rows' block, the packed and received copies and
// the part's (4 bytes a feature each). Entries are counted before
// deduplication and spread evenly over the ranks' rows.
func IngestBytes(n, edges int64, symmetrize bool, p, parts, dim int, streamed bool) int64 {
	entries := edges
	if symmetrize {
		entries *= 2
	}
	per := (parts + p - 1) / p // parts a writer writes
	blockRows, partRows := n/int64(p)+1, (n/int64(parts)+1)*int64(per)
	need := 8*entries/int64(p) + 24*blockRows
	need += 8*entries/int64(parts)*int64(per) + 24*partRows
	round := int64(DefaultRoundEdges) * 8 * 5 // pairs (twice symmetrized), rows, received pairs
	if symmetrize {
		round = int64(DefaultRoundEdges) * 8 * 9
	}
	need += max(round, 2*8<<21) // Redistribute's rounds: columns sent and received
	if streamed {
		need += 2 * streamChunk
	} else {
		need += 4 * int64(dim) * (3*blockRows + partRows)
	}
	return need
}

// sortByOwner orders the (row, column) pairs in place by the block of
// bounds that holds their row (collective.BlockOf), in place, and returns
// the number of int64s (two a pair) of each block.
func sortByOwner(pairs, bounds []int64) []int {
	p := len(bounds) - 1
	counts := make([]int, p)
	for k := 0; k < len(pairs); k += 2 {
		counts[collective.BlockOf(bounds, pairs[k])] += 2
	}
	next, end := make([]int, p), make([]int, p)
	for q, at := 0, 0; q < p; q++ {
		next[q], end[q] = at, at+counts[q]
		at += counts[q]
	}
	// Cycle each misplaced pair to the next free slot of its block.
	for q := range p {
		for next[q] < end[q] {
			k := next[q]
			d := collective.BlockOf(bounds, pairs[k])
			if d == q {
				next[q] += 2
				continue
			}
			t := next[d]
			pairs[k], pairs[t] = pairs[t], pairs[k]
			pairs[k+1], pairs[t+1] = pairs[t+1], pairs[k+1]
			next[d] += 2
		}
	}
	return counts
}

// Close closes the archive.
func (o *OGB) Close() error { return o.r.Close() }

// Name returns the dataset's name, the base name of its directory.
func (o *OGB) Name() string { return o.r.Name() }

// Path returns the dataset's directory.
func (o *OGB) Path() string { return o.r.Path() }

// NumNodes returns the number of vertices n.
func (o *OGB) NumNodes() int64 { return o.r.NumNodes() }

// Symmetric reports whether the rows were symmetrized when opened. An
// OGB dataset does not record symmetry; WriteParts checks it of rows
// that were not (dist.Reciprocal).
func (o *OGB) Symmetric() bool { return o.symmetric }

// Weighted returns false: the OGB layout has no edge weights.
func (o *OGB) Weighted() bool { return false }

// NumFeatures returns the feature dimension, 0 without node_feat.
func (o *OGB) NumFeatures() int { return o.r.NumFeatures() }

// HasLabels reports whether the dataset has labels.
func (o *OGB) HasLabels() bool { return o.r.HasLabels() }

// NumClasses returns 1 + the largest label of the whole dataset, 0
// without labels.
func (o *OGB) NumClasses() int { return o.numClasses }

// SplitSizes returns the sizes of the whole splits, sorted by name.
func (o *OGB) SplitSizes() []graph.SplitSizes { return o.sizes }

// Rows returns this rank's block of rows, built by OpenOGB; the caller
// must not modify it. Any other range is an error.
func (o *OGB) Rows(lo, hi int64) (*sparse.CSR, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.adj, nil
}

// Labels returns the labels of this rank's rows, nil without labels. Any
// other range is an error.
func (o *OGB) Labels(lo, hi int64) ([]int32, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.labels, nil
}

// SplitMembers returns every split's members among this rank's rows. Any
// other range is an error.
func (o *OGB) SplitMembers(lo, hi int64) (map[string]graph.Split, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.splits, nil
}

// Features reads the feature rows [lo, hi) (graph.OGBRows.Features).
func (o *OGB) Features(lo, hi int64) (*graph.FeatureBlock, error) {
	return o.r.Features(lo, hi)
}

// FeatureReader returns a reader of the feature rows by vertex id
// (graph.OGBRows.FeatureReader), nil without features or when node_feat
// cannot be read by id.
func (o *OGB) FeatureReader() (FeatureReader, error) {
	f, err := o.r.FeatureReader()
	if f == nil {
		return nil, err
	}
	return f, nil
}

// mine returns an error unless [lo, hi) is this rank's block.
func (o *OGB) mine(lo, hi int64) error {
	if lo != o.lo || hi != o.hi {
		return fmt.Errorf("partition: %s: rows [%d,%d) asked of a rank holding [%d,%d)", o.Path(), lo, hi, o.lo, o.hi)
	}
	return nil
}
