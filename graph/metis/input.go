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
	n := int32(n64)
	if ncon < 1 {
		return nil, fmt.Errorf("%w: ncon=%d < 1", ErrInput, ncon)
	}
	if vwgt == nil && ncon != 1 {
		return nil, fmt.Errorf("%w: ncon=%d needs vwgt", ErrInput, ncon)
	}
	if nparts < 1 {
		return nil, fmt.Errorf("%w: nparts=%d < 1", ErrInput, nparts)
	}
	if ncon > idxMax || nparts > idxMax {
		return nil, fmt.Errorf("%w: ncon=%d nparts=%d", ErrOverflow, ncon, nparts)
	}
	if opt.Seed < math.MinInt32 || opt.Seed > idxMax {
		return nil, fmt.Errorf("%w: seed %d", ErrOverflow, opt.Seed)
	}
	if opt.UFactor < 0 {
		return nil, fmt.Errorf("%w: UFactor=%d < 0", ErrInput, opt.UFactor)
	}
	if opt.UFactor > idxMax {
		return nil, fmt.Errorf("%w: UFactor %d", ErrOverflow, opt.UFactor)
	}
	if opt.Contiguous && opt.Recursive {
		return nil, fmt.Errorf("%w: Contiguous needs k-way partitioning, not Recursive", ErrInput)
	}

	// Structure of xadj.
	if xadj[0] != 0 {
		return nil, fmt.Errorf("%w: xadj[0]=%d, want 0", ErrInput, xadj[0])
	}
	for i := int64(0); i < n64; i++ {
		if xadj[i+1] < xadj[i] {
			return nil, fmt.Errorf("%w: xadj decreases at vertex %d", ErrInput, i)
		}
	}
	if xadj[n64] != int64(len(adjncy)) {
		return nil, fmt.Errorf("%w: xadj[n]=%d, want len(adjncy)=%d", ErrInput, xadj[n64], len(adjncy))
	}

	// Count the entries that are not self-loops and check their range.
	var kept int64
	for i := int64(0); i < n64; i++ {
		for k := xadj[i]; k < xadj[i+1]; k++ {
			j := adjncy[k]
			if j < 0 || j >= n64 {
				return nil, fmt.Errorf("%w: adjncy[%d]=%d outside [0,%d)", ErrInput, k, j, n64)
			}
			if j != i {
				kept++
			}
		}
	}
	if kept > idxMax {
		return nil, fmt.Errorf("%w: %d adjacency entries", ErrOverflow, kept)
	}

	in := &input{
		n:       n,
		ncon:    int32(ncon),
		nparts:  int32(nparts),
		xadj:    make([]int32, n64+1),
		adjncy:  make([]int32, max(kept, 1)),
		seed:    int32(opt.Seed),
		ufactor: int32(opt.UFactor),
	}
	var w int32
	for i := int64(0); i < n64; i++ {
		for _, j := range adjncy[xadj[i]:xadj[i+1]] {
			if j != i {
				in.adjncy[w] = int32(j)
				w++
			}
		}
		in.xadj[i+1] = w
	}

	if vwgt != nil {
		if int64(len(vwgt)) != n64*int64(ncon) {
			return nil, fmt.Errorf("%w: len(vwgt)=%d, want n·ncon=%d", ErrInput, len(vwgt), n64*int64(ncon))
		}
		// METIS sums each constraint's weights in idx_t, so the totals
		// must fit as well as the entries.
		total := make([]int64, ncon)
		in.vwgt = make([]int32, len(vwgt))
		for k, x := range vwgt {
			if x < 0 {
				return nil, fmt.Errorf("%w: vwgt[%d]=%d < 0", ErrInput, k, x)
			}
			c := k % ncon
			total[c] += x
			if total[c] > idxMax {
				return nil, fmt.Errorf("%w: total weight of constraint %d exceeds %d", ErrOverflow, c, idxMax)
			}
			in.vwgt[k] = int32(x)
		}
	}
	return in, nil
}
