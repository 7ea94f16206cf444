package metis

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by PartGraph. Every error it returns wraps exactly one of
// them, so callers can test with errors.Is.
var (
	// ErrInput reports an invalid argument, found either by PartGraph's own
	// checks or by METIS (METIS_ERROR_INPUT).
	ErrInput = errors.New("metis: invalid input")

	// ErrOverflow reports a value that does not fit METIS's idx_t.
	ErrOverflow = errors.New("metis: value does not fit idx_t")

	// ErrMemory reports that METIS ran out of memory (METIS_ERROR_MEMORY).
	ErrMemory = errors.New("metis: out of memory")

	// ErrMETIS reports any other METIS failure (METIS_ERROR).
	ErrMETIS = errors.New("metis: internal error")
)

// Options controls a partitioning.
type Options struct {
	// Seed seeds METIS's random number generator; METIS is deterministic
	// for a given seed and input. -1 selects METIS's own default seed.
	Seed int

	// UFactor is the allowed load imbalance in thousandths: a part may
	// weigh up to (1+UFactor/1000) times the average, per constraint.
	// Zero selects METIS's default, 30 (1.03) for k-way and 1 (1.001) for
	// recursive bisection.
	UFactor int

	// Contiguous asks for every part to be connected. It is valid only for
	// k-way partitioning of a connected graph.
	Contiguous bool

	// Recursive selects multilevel recursive bisection
	// (METIS_PartGraphRecursive) instead of multilevel k-way
	// (METIS_PartGraphKway).
	Recursive bool
}

// idxMax is the largest idx_t. metis.go asserts at compile time that idx_t
// is 32 bits wide, as IDXTYPEWIDTH in the Debian/Ubuntu metis.h says.
const idxMax = math.MaxInt32

// METIS return codes (rstatus_et in metis.h); metis.go asserts at compile
// time that they match the header.
const (
	statusOK          = 1
	statusErrorInput  = -2
	statusErrorMemory = -3
	statusError       = -4
)

// codeError maps a METIS return code to nil or an error wrapping one of
// the package's sentinel errors.
func codeError(code int) error {
	switch code {
	case statusOK:
		return nil
	case statusErrorInput:
		return fmt.Errorf("%w (METIS_ERROR_INPUT)", ErrInput)
	case statusErrorMemory:
		return fmt.Errorf("%w (METIS_ERROR_MEMORY)", ErrMemory)
	case statusError:
		return fmt.Errorf("%w (METIS_ERROR)", ErrMETIS)
	default:
		return fmt.Errorf("%w: unknown return code %d", ErrMETIS, code)
	}
}

// input is a graph converted to METIS's 32-bit idx_t, ready to hand to C.
type input struct {
	n, ncon, nparts int32
	xadj            []int32
	adjncy          []int32 // never empty: a dummy entry when there are no edges
	vwgt            []int32 // nil for unit weights
	seed, ufactor   int32
}

// convert checks the arguments of PartGraph and converts them to idx_t.
// Self-loops are dropped: METIS requires a graph without them, and they never
// contribute to an edge cut.
func convert(xadj, adjncy, vwgt []int64, ncon, nparts int, opt Options) (*input, error) {
	if len(xadj) == 0 {
		return nil, fmt.Errorf("%w: empty xadj (want n+1 entries)", ErrInput)
	}
	n64 := int64(len(xadj) - 1)
	if n64 > idxMax {
		return nil, fmt.Errorf("%w: %d vertices", ErrOverflow, n64)
	}
	if err := checkParams(vwgt != nil, ncon, nparts, opt); err != nil {
		return nil, err
	}
	in := &input{
		n:       int32(n64),
		ncon:    int32(ncon),
		nparts:  int32(nparts),
		seed:    int32(opt.Seed),
		ufactor: int32(opt.UFactor),
	}
	var err error
	if in.xadj, in.adjncy, err = convertAdjacency(xadj, adjncy); err != nil {
		return nil, err
	}
	if vwgt != nil {
		if in.vwgt, err = convertWeights(vwgt, n64, ncon); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// checkParams checks PartGraph's scalar arguments: the constraint count
// ncon (more than 1 needs weights), the part count nparts and the options.
func checkParams(weighted bool, ncon, nparts int, opt Options) error {
	if ncon < 1 {
		return fmt.Errorf("%w: ncon=%d < 1", ErrInput, ncon)
	}
	if !weighted && ncon != 1 {
		return fmt.Errorf("%w: ncon=%d needs vwgt", ErrInput, ncon)
	}
	if nparts < 1 {
		return fmt.Errorf("%w: nparts=%d < 1", ErrInput, nparts)
	}
	if ncon > idxMax || nparts > idxMax {
		return fmt.Errorf("%w: ncon=%d nparts=%d", ErrOverflow, ncon, nparts)
	}
	if opt.Seed < math.MinInt32 || opt.Seed > idxMax {
		return fmt.Errorf("%w: seed %d", ErrOverflow, opt.Seed)
	}
	if opt.UFactor < 0 {
		return fmt.Errorf("%w: UFactor=%d < 0", ErrInput, opt.UFactor)
	}
	if opt.UFactor > idxMax {
		return fmt.Errorf("%w: UFactor %d", ErrOverflow, opt.UFactor)
	}
	if opt.Contiguous && opt.Recursive {
		return fmt.Errorf("%w: Contiguous needs k-way partitioning, not Recursive", ErrInput)
	}
	return nil
}

// checkXadj checks that xadj is a row pointer over m adjacency entries:
// starting at 0, never decreasing and ending at m.
func checkXadj(xadj []int64, m int) error {
	n := int64(len(xadj) - 1)
	if xadj[0] != 0 {
		return fmt.Errorf("%w: xadj[0]=%d, want 0", ErrInput, xadj[0])
	}
	for i := int64(0); i < n; i++ {
		if xadj[i+1] < xadj[i] {
			return fmt.Errorf("%w: xadj decreases at vertex %d", ErrInput, i)
		}
	}
	if xadj[n] != int64(m) {
		return fmt.Errorf("%w: xadj[n]=%d, want len(adjncy)=%d", ErrInput, xadj[n], m)
	}
	return nil
}

// convertAdjacency checks the graph (xadj, adjncy) of len(xadj)-1 vertices
// and returns it in idx_t without self-loops. The returned adjncy is never
// empty: it holds a dummy entry when no edge is left.
func convertAdjacency(xadj, adjncy []int64) ([]int32, []int32, error) {
	if err := checkXadj(xadj, len(adjncy)); err != nil {
		return nil, nil, err
	}
	n := int64(len(xadj) - 1)
	// Count the entries that are not self-loops and check their range.
	var kept int64
	for i := int64(0); i < n; i++ {
		for k := xadj[i]; k < xadj[i+1]; k++ {
			j := adjncy[k]
			if j < 0 || j >= n {
				return nil, nil, fmt.Errorf("%w: adjncy[%d]=%d outside [0,%d)", ErrInput, k, j, n)
			}
			if j != i {
				kept++
			}
		}
	}
	if kept > idxMax {
		return nil, nil, fmt.Errorf("%w: %d adjacency entries", ErrOverflow, kept)
	}
	x32, a32 := make([]int32, n+1), make([]int32, max(kept, 1))
	var w int32
	for i := int64(0); i < n; i++ {
		for _, j := range adjncy[xadj[i]:xadj[i+1]] {
			if j != i {
				a32[w] = int32(j)
				w++
			}
		}
		x32[i+1] = w
	}
	return x32, a32, nil
}

// convertWeights checks the n·ncon vertex weights vwgt and returns them in
// idx_t. METIS sums each constraint's weights in idx_t, so the totals must
// fit as well as the entries.
func convertWeights(vwgt []int64, n int64, ncon int) ([]int32, error) {
	if int64(len(vwgt)) != n*int64(ncon) {
		return nil, fmt.Errorf("%w: len(vwgt)=%d, want n·ncon=%d", ErrInput, len(vwgt), n*int64(ncon))
	}
	total := make([]int64, ncon)
	w32 := make([]int32, len(vwgt))
	for k, x := range vwgt {
		if x < 0 {
			return nil, fmt.Errorf("%w: vwgt[%d]=%d < 0", ErrInput, k, x)
		}
		c := k % ncon
		total[c] += x
		if total[c] > idxMax {
			return nil, fmt.Errorf("%w: total weight of constraint %d exceeds %d", ErrOverflow, c, idxMax)
		}
		w32[k] = int32(x)
	}
	return w32, nil
}
