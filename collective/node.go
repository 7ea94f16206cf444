package collective

import (
	"fmt"
	"os"
)

// SplitNode returns the communicator of the ranks of c that run on this
// node, ordered by rank in c. It uses the backend's shared-memory split when
// there is one (MPI_Comm_split_type); otherwise it groups the ranks by host
// name. It is collective over c.
func SplitNode(c Comm) (Comm, error) {
	if ns, ok := c.(NodeSplitter); ok {
		return ns.SplitNode()
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("collective: SplitNode: %w", err)
	}
	all, counts, err := AllgatherSlice(c, []byte(host))
	if err != nil {
		return nil, err
	}
	color, off := -1, 0
	for q, n := range counts {
		if color < 0 && string(all[off:off+n]) == host {
			color = q
		}
		off += n
	}
	return c.Split(color, c.Rank())
}

// LocalRank returns this rank's index among the ranks of c on its node and
// their number. It is collective over c.
func LocalRank(c Comm) (rank, size int, err error) {
	node, err := SplitNode(c)
	if err != nil {
		return 0, 0, err
	}
	rank, size = node.Rank(), node.Size()
	return rank, size, Free(node)
}
