//go:build nompi

package ptscotch

// MaxNum is 0 in a nompi build: there is no PT-Scotch.
const MaxNum = int64(0)

// Available reports whether this binary was built with PT-Scotch.
const Available = false

// Part returns ErrNoMPI: PT-Scotch needs MPI.
func Part(comm int, xadj, adjncy []int64, parts int, opt Options, check bool) ([]int32, error) {
	if err := checkArgs(xadj, adjncy, parts, opt); err != nil {
		return nil, err
	}
	return nil, ErrNoMPI
}
