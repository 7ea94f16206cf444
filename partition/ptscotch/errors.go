package ptscotch

import (
	"errors"
	"fmt"
)

// Errors returned by Part. Every error it returns wraps exactly one of
// them, so callers can test with errors.Is.
var (
	// ErrInput reports an invalid argument found by Part's own checks.
	ErrInput = errors.New("ptscotch: invalid input")

	// ErrOverflow reports a value that does not fit SCOTCH_Num (MaxNum).
	ErrOverflow = errors.New("ptscotch: value does not fit SCOTCH_Num")

	// ErrScotch reports that a PT-Scotch call failed; Scotch prints its
	// own message on standard error.
	ErrScotch = errors.New("ptscotch: PT-Scotch failed")

	// ErrNoMPI is returned by Part in binaries built with the nompi tag.
	ErrNoMPI = errors.New("ptscotch: this binary was built without MPI (tag nompi), so without PT-Scotch")

	// ErrMPICH is returned by Part in binaries built with the mpich tag:
	// Debian's libptscotch is built against Open MPI, and one binary must
	// not link two MPIs.
	ErrMPICH = errors.New("ptscotch: this binary was built against MPICH (tag mpich), and PT-Scotch (Debian's libptscotch) is built against Open MPI, so it is not linked: use --method block or metis, or build for Open MPI (GNNMPI_MPI=openmpi ./run.sh build)")
)

// Strategy selects PT-Scotch's partitioning strategy
// (SCOTCH_stratDgraphMapBuild's flags).
type Strategy int

// The strategies, as SCOTCH_STRATDEFAULT, SCOTCH_STRATQUALITY,
// SCOTCH_STRATSPEED, SCOTCH_STRATBALANCE and SCOTCH_STRATSCALABILITY.
const (
	Default Strategy = iota
	Quality
	Speed
	Balance
	Scalability
)

// Options controls a partitioning.
type Options struct {
	// Imbalance is the allowed load imbalance: a part may hold up to
	// (1+Imbalance) times the average number of vertices. Zero selects
	// DefaultImbalance. It must lie in [0, 1).
	Imbalance float64

	// Seed seeds Scotch's random number generator (SCOTCH_randomSeed, then
	// SCOTCH_randomReset), so that a partitioning is repeatable for a
	// given seed, graph and number of ranks.
	Seed int64

	// Strategy selects the strategy; Default is SCOTCH_STRATDEFAULT.
	Strategy Strategy
}

// DefaultImbalance is the imbalance used when Options.Imbalance is zero:
// 3%, METIS's default for k-way partitioning.
const DefaultImbalance = 0.03

// checkArgs validates the arguments every rank can check alone: the local CSR
// structure, the part count and the options.
func checkArgs(xadj, adjncy []int64, parts int, opt Options) error {
	if len(xadj) == 0 {
		return fmt.Errorf("%w: xadj is empty (want len(xadj) = vertices + 1)", ErrInput)
	}
	if xadj[0] != 0 || xadj[len(xadj)-1] != int64(len(adjncy)) {
		return fmt.Errorf("%w: xadj does not start at 0 and end at len(adjncy)", ErrInput)
	}
	for i := 1; i < len(xadj); i++ {
		if xadj[i] < xadj[i-1] {
			return fmt.Errorf("%w: xadj is not non-decreasing", ErrInput)
		}
	}
	for _, j := range adjncy {
		if j < 0 {
			return fmt.Errorf("%w: negative vertex in adjncy", ErrInput)
		}
	}
	if parts < 1 {
		return fmt.Errorf("%w: parts < 1", ErrInput)
	}
	if opt.Imbalance < 0 || opt.Imbalance >= 1 {
		return fmt.Errorf("%w: imbalance outside [0,1)", ErrInput)
	}
	if opt.Strategy < Default || opt.Strategy > Scalability {
		return fmt.Errorf("%w: unknown strategy", ErrInput)
	}
	return nil
}
