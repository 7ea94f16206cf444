package distpart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// Options configure Partition.
type Options struct {
	// Parts is the number of parts, at least 1.
	Parts int
	// Engine cuts the symmetrized graph; nil cuts it into consecutive
	// blocks of vertices (partition.Block's parts).
	Engine dist.Engine
	// Seed is handed to the engine.
	Seed int64
	// Symmetrize cuts the graph A ∪ Aᵀ rather than A when the dataset is
	// not symmetric: the edge cut and the NNZ counted are those of the
	// symmetrized rows. The rows kept for WriteParts are the stored ones.
	Symmetrize bool
	// Progress, when not nil, is called on every rank with a line about
	// rank 0's block.
	Progress func(format string, args ...any)
}

// Result is what Partition returns on each rank.
type Result struct {
	// N is the number of vertices; the rank holds rows [Lo, Lo+Adj.NRows).
	N, Lo int64
	// Adj is the rank's rows as stored in the dataset (global column ids).
	Adj *sparse.CSR
	// Part is the part of each of the rank's rows.
	Part []int32
	// Parts is the number of parts.
	Parts int
	// NNZ is the number of edges cut over (of the symmetrized rows when
	// Options.Symmetrize made them), and Cut those whose ends lie in
	// different parts.
	NNZ, Cut int64
	// Sizes holds the number of vertices of each part, on every rank.
	Sizes []int64
	// Seconds is the partitioning's wall time, the slowest rank's.
	Seconds float64
}

// Partition reads this rank's block of rows of r and partitions the graph
// into o.Parts parts. An error of the engine is wrapped with r's path. It is collective over c: every rank must call it
// with the same options and the same dataset. Beside the engine and
// dist.Symmetrize it sends three scalar Allreduces, the halo exchange of
// dist.EdgeCut and dist.Sizes's Allreduce of o.Parts int64s.
//
// Partition will panic if o.Parts is less than 1.
func Partition(c collective.Comm, r Source, o Options) (*Result, error) {
	if o.Parts < 1 {
		panic("distpart: parts < 1")
	}
	n := r.NumNodes()
	lo, hi := dist.BlockRange(n, c.Size(), c.Rank())
	block, err := r.Rows(lo, hi)
	if err = collective.Agree(c, err); err != nil {
		return nil, err
	}
	cutBlock := block
	if o.Symmetrize && !r.Symmetric() {
		if cutBlock, err = dist.Symmetrize(c, n, lo, block); err != nil {
			return nil, err
		}
	}
	res := &Result{N: n, Lo: lo, Adj: block, Parts: o.Parts}
	if res.NNZ, err = collective.AllreduceScalar(c, cutBlock.NNZ(), collective.Sum); err != nil {
		return nil, err
	}
	if o.Progress != nil {
		o.Progress("partition: rank 0 holds rows [%d,%d) of %d (%d of %d edges)", lo, hi, n, cutBlock.NNZ(), res.NNZ)
	}
	t0 := time.Now()
	if o.Engine != nil {
		if res.Part, err = dist.Partition(c, n, lo, cutBlock, o.Parts, o.Seed, o.Engine); err != nil {
			return nil, fmt.Errorf("partition: %s: %w", r.Path(), err)
		}
	} else {
		res.Part = blockParts(n, o.Parts, lo, hi)
	}
	if res.Seconds, err = collective.AllreduceScalar(c, time.Since(t0).Seconds(), collective.Max); err != nil {
		return nil, err
	}
	if o.Engine != nil {
		res.Cut, err = dist.EdgeCut(c, n, lo, cutBlock, res.Part)
	} else {
		res.Cut, err = collective.AllreduceScalar(c, blockCut(n, o.Parts, lo, cutBlock), collective.Sum)
	}
	if err != nil {
		return nil, err
	}
	if res.Sizes, err = dist.Sizes(c, res.Part, o.Parts); err != nil {
		return nil, err
	}
	return res, nil
}

// blockParts returns the part of each row [lo, hi) of the block book of n
// vertices and k parts (partition.Block), without the book's O(n) array.
func blockParts(n int64, k int, lo, hi int64) []int32 {
	part := make([]int32, hi-lo)
	q := 0
	for v := lo; v < hi; v++ {
		for _, qhi := dist.BlockRange(n, k, q); v >= qhi; _, qhi = dist.BlockRange(n, k, q) {
			q++
		}
		part[v-lo] = int32(q)
	}
	return part
}

// blockCut returns the edges of rows [lo, lo+adj.NRows) whose ends lie in
// different parts of the block book of n vertices and k parts: the part
// of any vertex is known from its id, so no halo is fetched.
func blockCut(n int64, k int, lo int64, adj *sparse.CSR) int64 {
	bounds := make([]int64, k+1)
	for q := range k {
		bounds[q], bounds[q+1] = dist.BlockRange(n, k, q)
	}
	var cut int64
	for i := range adj.NRows {
		pi := collective.BlockOf(bounds, lo+i)
		for _, j := range adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]] {
			if j < bounds[pi] || j >= bounds[pi+1] {
				cut++
			}
		}
	}
	return cut
}

// Book gathers res's parts on rank 0 (dist.GatherParts: one Gatherv of
// the ranks' parts) and returns there the partition book, named method;
// the other ranks get nil. It is collective over c.
func Book(c collective.Comm, res *Result, method string) (*partition.Book, error) {
	all, err := dist.GatherParts(c, res.Part, 0)
	if err != nil {
		return nil, err
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return partition.New(all, res.Parts, method)
}

// WriteOptions configure WriteParts.
type WriteOptions struct {
	// Dir is the directory of the partitioned dataset, made if needed.
	Dir string
	// Method names the partitioning in the manifest.
	Method string
	// Format is how the part files store the features.
	Format graph.FeatureFormat
	// Progress, when not nil, is called on rank 0 after each part it
	// writes.
	Progress func(format string, args ...any)
}

// WriteParts writes the partitioned dataset o.Dir from the ranks' row
// blocks of r and their parts res (from Partition over the same c and
// r): every rank reads the features, labels and split members of its
// rows, dist.Redistribute relabels them and sends each part to its writer
// (rank q mod p writes part q), the writers write their part files
// (graph.WritePart), and rank 0 writes the manifest last and returns it
// (the other ranks return nil). An error on any rank fails every rank and
// leaves no manifest. It is collective over c; beside Redistribute it
// sends a few scalar Allreduces and one Allgatherv of 3 int64s per part.
func WriteParts(c collective.Comm, r Source, res *Result, o WriteOptions) (*graph.PartManifest, error) {
	n, lo, adj, part, parts := res.N, res.Lo, res.Adj, res.Part, res.Parts
	hi := lo + adj.NRows
	format, err := graph.ParseFeatureFormat(string(o.Format))
	if err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	// Rank 0 makes the directory and removes an old manifest first, so
	// that a failed run leaves none.
	err = collective.RankZero(c, func() error {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return fmt.Errorf("partition: cannot make %s: %w", o.Dir, err)
		}
		if err := os.Remove(filepath.Join(o.Dir, graph.PartManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("partition: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b := &dist.Block{Lo: lo, Adj: adj, Splits: map[string]dist.Members{}}
	stream, err := streamFeatures(c, r, lo, hi, format)
	if err != nil {
		return nil, err
	}
	var fb *graph.FeatureBlock
	err = func() error {
		var err error
		if b.Labels, err = r.Labels(lo, hi); err != nil {
			return err
		}
		splits, err := r.SplitMembers(lo, hi)
		if err != nil {
			return err
		}
		for name, s := range splits {
			b.Splits[name] = dist.Members{s.Train, s.Valid, s.Test}
		}
		if stream != nil {
			return nil
		}
		fb, err = r.Features(lo, hi)
		return err
	}()
	if err = collective.Agree(c, err); err != nil {
		return nil, err
	}
	if fb != nil {
		// The format of the whole matrix, decided alike on every rank.
		nnz, ones := fb.Stats()
		allOnes := int64(0)
		if !ones {
			allOnes = 1
		}
		if err := collective.AllreduceVars(c, collective.Sum, &nnz, &allOnes); err != nil {
			return nil, err
		}
		b.Feat, b.FeatCSR, err = fb.Rows(format, n, nnz, allOnes == 0)
		if err = collective.Agree(c, err); err != nil {
			return nil, err
		}
		fb = nil
	}
	// As Dataset.FeatureFormat: every rank decided alike.
	var featFormat graph.FeatureFormat
	switch {
	case stream != nil:
		featFormat = graph.FeatureDense
	case b.FeatCSR != nil:
		featFormat = graph.FeatureCSR
	case b.Feat != nil:
		featFormat = graph.FeatureDense
	}
	symmetric := r.Symmetric()
	if !symmetric {
		if symmetric, err = dist.Reciprocal(c, n, lo, adj); err != nil {
			return nil, err
		}
	}
	offsets, mine, err := dist.Redistribute(c, n, b, part, parts)
	if err != nil {
		return nil, err
	}
	b = nil

	// The writers write their parts.
	numClasses := r.NumClasses()
	var files []graph.PartFile
	var fnnz int64
	fones := true
	err = func() error {
		for _, pr := range mine {
			p := &graph.Part{Name: r.Name(), NumNodes: n, Lo: pr.Lo, Hi: pr.Hi, Adj: pr.Adj, Feat: pr.Feat, FeatCSR: pr.FeatCSR,
				Labels: pr.Labels, NumClasses: numClasses, Splits: map[string]graph.Split{}, OrigIDs: pr.OrigIDs,
				Symmetric: symmetric, Weighted: r.Weighted()}
			for name, m := range pr.Splits {
				p.Splits[name] = graph.Split{Train: m[0], Valid: m[1], Test: m[2]}
			}
			path := filepath.Join(o.Dir, graph.PartFileName(pr.Part))
			var f graph.PartFile
			var z int64
			var ones bool
			if stream != nil {
				f, z, ones, err = stream.write(path, p, pr.Part, parts)
			} else {
				z, ones = p.FeatureStats()
				f, err = graph.WritePart(path, p, pr.Part, parts)
			}
			if err != nil {
				return err
			}
			fnnz, fones = fnnz+z, fones && ones
			files = append(files, f)
			if c.Rank() == 0 && o.Progress != nil {
				o.Progress("wrote part %d of %d: %s, vertices [%d,%d), %d edges, %d bytes", pr.Part+1, parts, f.Name, p.Lo, p.Hi, f.Edges, f.Bytes)
			}
		}
		return nil
	}()
	if err = collective.Agree(c, err); err != nil {
		return nil, err
	}
	mine = nil
	notOnes := int64(0)
	if !fones {
		notOnes = 1
	}
	if err := collective.AllreduceVars(c, collective.Sum, &fnnz, &notOnes); err != nil {
		return nil, err
	}
	all, err := gatherPartFiles(c, files, parts)
	if err != nil {
		return nil, err
	}
	nnz, err := collective.AllreduceScalar(c, adj.NNZ(), collective.Sum)
	if err != nil {
		return nil, err
	}
	var m *graph.PartManifest
	err = collective.RankZero(c, func() error {
		m = &graph.PartManifest{Format: graph.PartFormat, Version: graph.PartVersion, Name: r.Name(), NumNodes: n, NumEdges: nnz,
			NumFeatures: r.NumFeatures(), HasLabels: r.HasLabels(), NumClasses: numClasses, Symmetric: symmetric,
			Weighted: r.Weighted(), Method: o.Method, Parts: parts, Offsets: offsets, EdgeCut: res.Cut,
			Splits: []graph.SplitSizes{}, Files: all, Dir: o.Dir}
		if featFormat != "" {
			m.FeatureFormat, m.FeatureNNZ, m.FeaturePattern = featFormat, fnnz, notOnes == 0
		}
		if stream != nil && stream.half {
			m.FeatureDType = "float16"
		}
		sizes := r.SplitSizes()
		slices.SortFunc(sizes, func(a, b graph.SplitSizes) int { return strings.Compare(a.Name, b.Name) })
		m.Splits = append(m.Splits, sizes...)
		return graph.WritePartManifest(o.Dir, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// FeatureReader reads dense feature rows by vertex id, widened to
// float32 or, for features stored in half precision, as half words: a
// mapped array in any order, a streamed one by ids ascending over all
// calls (graph.OGBFeatureReader).
type FeatureReader interface {
	// Read fills dst, len(ids) rows, with the feature rows of ids.
	Read(ids []int64, dst []float32) error
	// Half reports whether the rows are stored in half precision, which
	// ReadHalf reads unwidened.
	Half() bool
	// ReadHalf is Read into the rows' half-precision words.
	ReadHalf(ids []int64, dst []uint16) error
	Close() error
}

// RowFeatures is a Source whose dense feature rows can be read by vertex
// id (OGB), which WriteParts then reads while it writes each part
// instead of sending them to the part's writer.
type RowFeatures interface {
	// FeatureReader returns a new reader, or nil when the features cannot
	// be read by id.
	FeatureReader() (FeatureReader, error)
}

// streamed reads the dense feature rows of the parts a rank writes from
// the dataset, for graph.WritePartRows.
type streamed struct {
	src  RowFeatures
	dim  int
	half bool // the rows are float16, written as such
}

// streamFeatures returns how WriteParts reads the features when it can
// read them while writing (r is a RowFeatures with a reader on every
// rank, and format, decided for the whole matrix, is dense), else nil:
// then the ranks hold their rows' features and send them to the parts'
// writers. Unless format is dense, it reads this rank's rows [lo, hi)
// once, in chunks, for the nonzeros that decide it (two scalar
// Allreduces). It is collective over c.
func streamFeatures(c collective.Comm, r Source, lo, hi int64, format graph.FeatureFormat) (*streamed, error) {
	src, ok := r.(RowFeatures)
	dim := r.NumFeatures()
	if !ok || dim == 0 {
		return nil, nil
	}
	var nnz int64
	ones := true
	half := int64(1)
	have, err := func() (int64, error) {
		f, err := src.FeatureReader()
		if err != nil || f == nil {
			return 0, err
		}
		defer f.Close()
		if !f.Half() {
			half = 0
		}
		if format == graph.FeatureDense {
			return 1, nil
		}
		step := max(1, int64(streamChunk/(4*dim)))
		ids := make([]int64, min(step, hi-lo))
		buf := make([]float32, int64(len(ids))*int64(dim))
		for at := lo; at < hi; at += step {
			k := min(step, hi-at)
			for i := range k {
				ids[i] = at + i
			}
			rows := buf[:k*int64(dim)]
			if err := f.Read(ids[:k], rows); err != nil {
				return 0, err
			}
			for _, v := range rows {
				if v != 0 {
					nnz++
					ones = ones && v == 1
				}
			}
		}
		return 1, nil
	}()
	if err = collective.Agree(c, err); err != nil {
		return nil, err
	}
	if err := collective.AllreduceVars(c, collective.Min, &have, &half); err != nil || have == 0 {
		return nil, err
	}
	if format != graph.FeatureDense {
		notOnes := int64(0)
		if !ones {
			notOnes = 1
		}
		if err := collective.AllreduceVars(c, collective.Sum, &nnz, &notOnes); err != nil {
			return nil, err
		}
		if format, err = format.Decide(nnz, r.NumNodes(), dim); err != nil || format != graph.FeatureDense {
			return nil, err
		}
	}
	return &streamed{src: src, dim: dim, half: half == 1}, nil
}

// streamChunk is how many bytes of feature rows streamFeatures reads at
// a time.
const streamChunk = 4 << 20

// write writes part index of parts p, whose features it reads by p's
// original ids (ascending), with graph.WritePartRows, or
// graph.WritePartHalfRows for half features (kept half): a new reader for
// each of its two passes.
func (s *streamed) write(path string, p *graph.Part, index, parts int) (graph.PartFile, int64, bool, error) {
	var f FeatureReader
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	open := func(lo int64) error {
		if lo != 0 {
			return nil
		}
		if f != nil {
			f.Close()
		}
		var err error
		if f, err = s.src.FeatureReader(); err != nil {
			return err
		}
		if f == nil {
			return fmt.Errorf("partition: %s: the features can no longer be read by id", path)
		}
		return nil
	}
	if s.half {
		return graph.WritePartHalfRows(path, p, index, parts, s.dim, func(lo, hi int64, dst []uint16) error {
			if err := open(lo); err != nil {
				return err
			}
			return f.ReadHalf(p.OrigIDs[lo:hi], dst)
		})
	}
	return graph.WritePartRows(path, p, index, parts, s.dim, func(lo, hi int64, dst []float32) error {
		if err := open(lo); err != nil {
			return err
		}
		return f.Read(p.OrigIDs[lo:hi], dst)
	})
}

// gatherPartFiles returns the manifest entries of the parts parts, in part
// order, from the entries files of the parts each rank wrote (rank r the
// parts r, r+p, …, ascending). It is collective over c.
func gatherPartFiles(c collective.Comm, files []graph.PartFile, parts int) ([]graph.PartFile, error) {
	const fields = 3
	mine := make([]int64, 0, fields*len(files))
	for _, f := range files {
		mine = append(mine, f.Bytes, int64(f.Checksum), f.Edges)
	}
	all, counts, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	p := c.Size()
	out := make([]graph.PartFile, parts)
	at := 0
	for r, k := range counts {
		for i := range k / fields {
			q := r + i*p
			if q >= parts {
				return nil, fmt.Errorf("partition: rank %d wrote %d parts of %d", r, k/fields, parts)
			}
			x := all[at+fields*i:]
			out[q] = graph.PartFile{Name: graph.PartFileName(q), Bytes: x[0], Checksum: uint32(x[1]), Edges: x[2]}
		}
		at += k
	}
	return out, nil
}
