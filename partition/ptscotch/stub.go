//go:build nompi || mpich

package ptscotch

// MaxNum is 0 where PT-Scotch is not linked.
const MaxNum = int64(0)

// Available reports whether this binary was built with PT-Scotch.
const Available = false

// Part checks its arguments and returns Unavailable: PT-Scotch is not
// linked.
func Part(comm int, xadj, adjncy []int64, parts int, opt Options, check bool) ([]int32, error) {
	if err := checkArgs(xadj, adjncy, parts, opt); err != nil {
		return nil, err
	}
	return nil, Unavailable
}
