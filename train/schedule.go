package train

import (
	"slices"

	"gnnmpi/collective"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
)

// Stream identifiers of the seeded random streams (internal/rng). Every
// random choice of a run comes from one of them, keyed by the seed and,
// where it differs between ranks or steps, by epoch, step and rank, so a
// resumed run draws exactly what an uninterrupted one does.
const (
	streamInit        = iota + 1 // weight initialisation (rank-free)
	streamShuffle                // per-epoch shuffle of the training vertices
	streamSample                 // neighbour sampling of one minibatch
	streamDropout                // dropout masks of one minibatch
	streamSim                    // simulated epochs that score the sim feature cache
	streamShufflePart            // per-epoch shuffle of one dataset part's training vertices (elastic schedule of a partitioned dataset)
	streamEvalSample             // neighbour sampling of evaluation (Config.EvalFanouts; one key for every minibatch and rank)
)

// evenSplit returns the sizes of n items split into k near-equal parts:
// the first n mod k parts get one more.
func evenSplit(n, k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = n / k
		if i < n%k {
			s[i]++
		}
	}
	return s
}

// numBatches returns the number of minibatches every rank takes per epoch:
// enough that no rank's batch exceeds batch vertices. parts[r] is the
// number of training vertices rank r draws from per epoch. It is at least 1.
func numBatches(parts []int, batch int) int {
	nb := 1
	for _, n := range parts {
		nb = max(nb, (n+batch-1)/batch)
	}
	return nb
}

// globalBatchSizes returns, for each of the nb steps, the number of seeds
// over all ranks: the denominator of the global mean loss.
func globalBatchSizes(parts []int, nb int) []int {
	tot := make([]int, nb)
	for _, n := range parts {
		for i, s := range evenSplit(n, nb) {
			tot[i] += s
		}
	}
	return tot
}

// schedule describes one epoch's minibatches on every rank: which training
// vertices each rank draws from, shuffled, and how they are cut into the
// same number of batches on every rank so that the collectives line up.
type schedule struct {
	mode  Shuffle
	train []int64 // local mode: this rank's training vertices; global: all of them (sorted)
	parts []int   // vertices each rank draws from per epoch (not elastic)
	nb    int     // minibatches per rank per epoch
	sizes []int   // seeds per step over all ranks
	// elastic is true with the global shuffle and a global batch size:
	// step i then covers the i-th of nb = ⌈N/GlobalBatchSize⌉ near-equal
	// runs of the epoch's permutation of all N training vertices, which
	// the p ranks split near-equally, so that the step's global minibatch
	// does not depend on p (what a checkpoint needs to resume at another
	// rank count).
	elastic bool
	p       int // ranks (elastic)
	// partTrain, with the elastic schedule of a partitioned dataset, is
	// the training vertices (sorted) of each dataset part the rank's run
	// part holds, from dataset part partFirst on; step i then takes the
	// i-th of nb near-equal runs of every dataset part's own permutation,
	// which the rc ranks of the grid row (col the rank's) split
	// near-equally: the K parts, not the p ranks, cut the epoch.
	partTrain [][]int64
	partFirst int
	col, rc   int
}

// newPartSchedule builds the elastic schedule of a rank of a partitioned
// dataset (schedule.partTrain): partTrain[j] is the training vertices of
// dataset part first+j, counts[k] the number of dataset part k's (all
// K of them), col the rank's column among the rc ranks of its grid row,
// and global the global batch size.
func newPartSchedule(partTrain [][]int64, counts []int, first, col, rc, global int) *schedule {
	total := 0
	for _, n := range counts {
		total += n
	}
	s := &schedule{mode: ShuffleLocal, elastic: true, partTrain: partTrain, partFirst: first, col: col, rc: rc}
	s.nb = max(1, (total+global-1)/global)
	s.sizes = globalBatchSizes(counts, s.nb)
	return s
}

// partBatches returns the elastic schedule's minibatches of a partitioned
// dataset (schedule.partTrain) of one epoch, each sorted.
func (s *schedule) partBatches(seed uint64, epoch int) [][]int64 {
	out := make([][]int64, s.nb)
	for j, train := range s.partTrain {
		perm := slices.Clone(train)
		g := rng.New(seed, streamShufflePart, uint64(epoch), uint64(s.partFirst+j))
		g.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		lo := 0
		for i, n := range evenSplit(len(perm), s.nb) {
			share := evenSplit(n, s.rc)
			at := lo
			for q := range s.col {
				at += share[q]
			}
			out[i] = append(out[i], perm[at:at+share[s.col]]...)
			lo += n
		}
	}
	for _, b := range out {
		slices.Sort(b)
	}
	return out
}

// newSchedule builds the schedule of rank r of p. owned is the training
// vertices rank r owns (sorted); counts[q] is the number rank q owns; all
// is every training vertex (sorted), used by the global mode. global is
// the global batch size (Config.GlobalBatchSize) or 0; with the global
// mode and global > 0 the schedule is elastic (schedule.elastic).
func newSchedule(mode Shuffle, owned, all []int64, counts []int, r, batch, global int) *schedule {
	s := &schedule{mode: mode}
	if mode == ShuffleGlobal && global > 0 {
		s.train, s.elastic, s.p = all, true, len(counts)
		s.nb = max(1, (len(all)+global-1)/global)
		s.sizes = evenSplit(len(all), s.nb)
		return s
	}
	switch mode {
	case ShuffleGlobal:
		s.train = all
		s.parts = evenSplit(len(all), len(counts))
	default:
		s.train = owned
		s.parts = counts
	}
	s.nb = numBatches(s.parts, batch)
	s.sizes = globalBatchSizes(s.parts, s.nb)
	return s
}

// batches returns rank r's minibatch seeds of one epoch, each sorted. The
// shuffle stream is keyed by (seed, epoch) in global mode, so every rank
// computes the same permutation and takes its contiguous share, and by
// (seed, epoch, rank) in local mode.
func (s *schedule) batches(seed uint64, epoch, r int) [][]int64 {
	if s.partTrain != nil {
		return s.partBatches(seed, epoch)
	}
	perm := slices.Clone(s.train)
	var g = rng.New(seed, streamShuffle, uint64(epoch))
	if s.mode != ShuffleGlobal {
		g = rng.New(seed, streamShuffle, uint64(epoch), uint64(r))
	}
	g.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	if s.elastic {
		out := make([][]int64, s.nb)
		lo := 0
		for i, n := range s.sizes {
			share := evenSplit(n, s.p)
			at := lo
			for q := range r {
				at += share[q]
			}
			b := slices.Clone(perm[at : at+share[r]])
			slices.Sort(b)
			out[i] = b
			lo += n
		}
		return out
	}
	if s.mode == ShuffleGlobal {
		lo := 0
		for q := range r {
			lo += s.parts[q]
		}
		perm = perm[lo : lo+s.parts[r]]
	}
	out := make([][]int64, s.nb)
	lo := 0
	for i, n := range evenSplit(len(perm), s.nb) {
		b := slices.Clone(perm[lo : lo+n])
		slices.Sort(b)
		out[i] = b
		lo += n
	}
	return out
}

// partSchedule builds the elastic schedule of this rank of a partitioned
// dataset (newPartSchedule), gathering every dataset part's number of
// training vertices (phase setup).
//
// partSchedule is collective over t.c.
func (t *trainer) partSchedule() (*schedule, error) {
	d, c, rc := t.d, t.c, t.cfg.Replication
	k, runs := len(d.PartOffsets)-1, c.Size()/rc
	run := c.Rank() / rc
	first, last := run*k/runs, (run+1)*k/runs
	partTrain := make([][]int64, last-first)
	mine := make([]int64, k)
	for j := range partTrain {
		lo, hi := d.PartOffsets[first+j], d.PartOffsets[first+j+1]
		a, _ := slices.BinarySearch(d.Split.Train, lo)
		b, _ := slices.BinarySearch(d.Split.Train, hi)
		partTrain[j] = d.Split.Train[a:b]
		mine[first+j] = int64(b - a)
	}
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	all, _, err := collective.AllgatherSlice(c, mine)
	restore()
	if err != nil {
		return nil, err
	}
	counts := make([]int, k)
	for i, n := range all {
		counts[i%k] = max(counts[i%k], int(n))
	}
	return newPartSchedule(partTrain, counts, first, c.Rank()%rc, rc, t.cfg.globalBatch), nil
}
