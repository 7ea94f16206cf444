package train

import (
	"fmt"
	"path/filepath"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/sat"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// loadParts reads rank c.Rank()'s rows of the partitioned dataset in dir
// (graph.WriteParts): with feature replication rc the run has p/rc parts,
// each a run of consecutive dataset parts (graph.PartManifest.RunParts),
// and rank r holds run part r/rc: its adjacency rows, features, labels and
// split members, nothing of the other parts. With whole set (a replicated
// topology) it also reads every part's adjacency rows and labels, so that
// Adj and Labels cover the graph.
//
// Before reading, the bytes the rows will take are compared with the
// memory this process may still allocate (memlimit.Available), so that a
// part too large for a rank is an error naming what did not fit rather
// than the out-of-memory killer.
//
// loadParts is collective over c.
func loadParts(c collective.Comm, dir string, o LoadOptions, rc int, whole bool) (*Data, error) {
	m, err := graph.ReadPartManifest(dir)
	if err != nil {
		return nil, err
	}
	if o.Symmetrize && !m.Symmetric {
		return nil, settingErrorf("train: %s is partitioned: symmetrize when partitioning, not when loading (%s)", dir, SettingSymmetrize)
	}
	if o.Book != "" || (o.Partition != "" && o.Partition != PartitionMetis) { // metis: the flags' default
		return nil, settingErrorf("train: %s is partitioned already (%s, %d parts); %s does not apply", dir, m.Method, m.Parts, SettingPartition)
	}
	p := c.Size()
	first, last, err := m.RunParts(c.Rank(), p, rc)
	if err != nil {
		return nil, err
	}
	name, split, err := m.SplitNamed(o.Split)
	if err != nil {
		return nil, err
	}
	if split.Train == 0 {
		return nil, fmt.Errorf("train: split %q of %s has no training vertices", name, dir)
	}
	if err := checkBudget(c, dir, m, first, last, whole); err != nil {
		return nil, err
	}
	o.progress("loading parts [%d, %d) of %s (%d parts)", first, last, dir, m.Parts)
	part, err := graph.LoadParts(dir, m, first, last, graph.PartReadOptions{FeatureFormat: o.Format, KeepHalf: o.KeepHalf})
	if err := collective.Agree(c, err); err != nil { // a damaged part fails every rank
		return nil, err
	}
	if part.Feat == nil && part.Feat16 == nil && part.FeatCSR == nil {
		return nil, fmt.Errorf("train: %s has no node features", dir)
	}
	if part.Labels == nil || m.NumClasses < 1 {
		return nil, fmt.Errorf("train: %s has no node labels", dir)
	}
	if err := checkSplitSizes(c, m, part, rc); err != nil {
		return nil, err
	}
	offsets := m.RunOffsets(p / rc)
	book, err := partition.Contiguous(offsets, "parts")
	if err != nil {
		return nil, err
	}
	d := &Data{Name: m.Name, Adj: part.Adj, Feat: part.Feat, Feat16: part.Feat16, FeatCSR: part.FeatCSR, Labels: part.Labels, NumClasses: m.NumClasses,
		SplitName: name, Split: part.Splits[name], TrainTotal: int(split.Train), Book: book, RowLo: part.Lo, RowHi: part.Hi, Offsets: offsets, PartOffsets: m.Offsets, OrigIDs: part.OrigIDs}
	if whole {
		o.progress("loading the adjacency and labels of all %d parts (replicated topology)", m.Parts)
		all, err := graph.LoadParts(dir, m, 0, m.Parts, graph.PartReadOptions{NoFeatures: true})
		if err := collective.Agree(c, err); err != nil {
			return nil, err
		}
		d.Adj, d.Labels, d.Split, d.RowLo, d.RowHi = all.Adj, all.Labels, all.Splits[name], 0, m.NumNodes
	}
	if d.Reciprocity, err = reciprocityRows(c, d, m.Symmetric, rc); err != nil {
		return nil, err
	}
	counts := graph.ClassCounts(part.Labels, m.NumClasses)
	neg := int64(0)
	if !nonNegative(d.Feat) || !nonNegativeHalf(d.Feat16) || !nonNegativeCSR(d.FeatCSR) {
		neg = 1
	}
	// Each run part is held by rc ranks: count its labels once.
	if c.Rank()%rc != 0 {
		clear(counts)
	}
	if err := collective.AllreduceSlice(c, counts, collective.Sum); err != nil {
		return nil, err
	}
	if err := collective.AllreduceVars(c, collective.Max, &neg); err != nil {
		return nil, err
	}
	d.EmptyClasses, d.NonNegative = graph.EmptyClasses(counts), neg == 0
	return d, nil
}

// checkSplitSizes fails every rank, naming the manifest, the split and
// the counts, unless the training, validation and test members that the
// part files hold, summed over the ranks (each run part once: rc ranks
// hold it), are the sizes the manifest states for every split. Training
// divides its loss by the manifest's count, so a manifest that is off by
// one would train silently on a wrong mean. part is the rank's run part;
// checkSplitSizes is collective over c.
func checkSplitSizes(c collective.Comm, m *graph.PartManifest, part *graph.Part, rc int) error {
	counts := make([]int64, 3*len(m.Splits))
	if c.Rank()%rc == 0 {
		for k, s := range m.Splits {
			sp := part.Splits[s.Name]
			counts[3*k], counts[3*k+1], counts[3*k+2] = int64(len(sp.Train)), int64(len(sp.Valid)), int64(len(sp.Test))
		}
	}
	if err := collective.AllreduceSlice(c, counts, collective.Sum); err != nil {
		return err
	}
	for k, s := range m.Splits {
		for i, want := range []struct {
			name string
			n    int64
		}{{"training", s.Train}, {"validation", s.Valid}, {"test", s.Test}} {
			if got := counts[3*k+i]; got != want.n {
				return fmt.Errorf("train: %s: split %q has %d %s vertices, but its part files hold %d: the manifest does not describe these parts", filepath.Join(m.Dir, graph.PartManifestName), s.Name, want.n, want.name, got)
			}
		}
	}
	return nil
}

// available is memlimit.Available, a variable for the tests.
var available = memlimit.Available

// progress reports a line if o has a progress function.
func (o *LoadOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// checkBudget fails every rank, naming the parts and the limit, when the
// rows some rank is about to read do not fit the memory it may still
// allocate: the part files' bytes (what the rows take in memory), plus
// every part's adjacency when the topology is replicated. It is
// collective over c.
func checkBudget(c collective.Comm, dir string, m *graph.PartManifest, first, last int, whole bool) error {
	var need int64
	for q := first; q < last; q++ {
		need += m.Files[q].Bytes
	}
	if whole {
		for q := range m.Parts {
			if q < first || q >= last {
				need += m.Files[q].Bytes
			}
		}
	}
	return fits(c, need, fmt.Sprintf("parts [%d, %d) of %s need %s", first, last, dir, gib(need)))
}

// fits fails every rank of c when some rank's need exceeds what it may
// still allocate (available): that rank's error starts "out of memory",
// says what (what: "parts … need 3.1 GiB") and which limit applies; every
// rank that does not fit returns its own such error, and the others one
// that names the lowest of them. It is collective over c.
func fits(c collective.Comm, need int64, what string) error {
	mine := fitsLocal(c.Rank(), need, what)
	if err := collective.Agree(c, mine); mine == nil {
		return err
	}
	return mine // every rank that does not fit reports its own limit
}

// fitsLocal returns fits's error for rank when need exceeds what this
// process may still allocate (available), and nil otherwise. It makes no
// collective call.
func fitsLocal(rank int, need int64, what string) error {
	if b := available(); need > b.Bytes {
		return fmt.Errorf("train: rank %d: out of memory: %s, but this rank may allocate only %s; run on more ranks (each holds 1/p of the graph) or raise the limit",
			rank, what, b)
	}
	return nil
}

// MetisFits returns a graph.MetisOptions.Fits for rank: nil when METIS's
// estimated need (graph.MetisBytes) fits what the rank may still allocate,
// else an error naming both and what to do instead (method: the flag
// that picks another partition, such as --partition). With log not nil
// it logs the need, the peak it makes with the resident memory, and the
// limit first.
func MetisFits(rank int, method string, log func(string, ...any)) func(need int64) error {
	return func(need int64) error {
		b := available()
		if log != nil {
			rss := memlimit.RSS()
			log("memory check: rank %d: METIS needs about %s (%d bytes) more at its peak (estimated peak %d bytes); this rank may allocate %s", rank, gib(need), need, sat.Add(rss, need), b)
		}
		if need > b.Bytes {
			return fmt.Errorf("train: rank %d: out of memory: METIS partitioning of the whole graph needs about %s, but this rank may allocate only %s; "+
				"partition the graph ahead over the ranks (mpirun … gnnmpi partition --method ptscotch --out DIR), take %s block or random, or raise the limit",
				rank, gib(need), b, method)
		}
		return nil
	}
}

// gib formats bytes in GiB.
func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// reciprocityRows returns the fraction of the graph's edges (i, j) whose
// reverse (j, i) is an edge too (1 for a graph recorded as symmetric or
// without edges): over the ranks' rows by dist.Reciprocity, on a
// communicator with one rank per run part (the rc ranks of a run part hold
// the same rows; each such group computes it alike), or on every rank
// alone when the rank holds the whole graph. It is collective over c.
func reciprocityRows(c collective.Comm, d *Data, symmetric bool, rc int) (float64, error) {
	if symmetric {
		return 1, nil
	}
	if !d.Partitioned() {
		found, edges := graph.Reciprocity(d.Adj)
		if edges == 0 {
			return 1, nil
		}
		return float64(found) / float64(edges), nil
	}
	g, err := collective.NewGrid(c, c.Size()/rc, rc)
	if err != nil {
		return 0, err
	}
	found, edges, err := dist.Reciprocity(g.ColComm, dist.Rows{Adj: d.Adj, Lo: d.RowLo}, d.Book.Owner)
	if e := g.Free(); err == nil {
		err = e
	}
	if err != nil || edges == 0 {
		return 1, err
	}
	return float64(found) / float64(edges), nil
}

// csrBytes returns the bytes of a CSR's arrays.
func csrBytes(m *sparse.CSR) int64 {
	if m == nil {
		return 0
	}
	return int64(len(m.Indptr)+len(m.Indices))*8 + int64(len(m.Values))*8
}
