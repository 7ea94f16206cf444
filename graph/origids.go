package graph

import (
	"fmt"

	"gnnmpi/collective"
)

// AskOrigIDs returns the original ids of ids, new ids of a partitioned
// dataset, asking the ranks that hold them. The run is the one RunParts
// lays out: c.Size() ranks with replication rc, run part q holding the
// new ids [bounds[q], bounds[q+1]) (bounds = PartManifest.RunOffsets of
// c.Size()/rc run parts) on ranks q·rc … q·rc+rc−1, of which this rank
// asks the one of its own replica index, c.Rank() mod rc. Every rank
// answers from part, the rows it holds: out[i] = OrigIDs of ids[i].
//
// AskOrigIDs is collective over c: every rank calls it, with the same
// bounds and rc and its own ids (any number, repeats asked each time). Its
// traffic is collective.Halo's: 16 bytes per id asked of another rank,
// plus the request counts. The caller owns the returned slice. It returns
// an error if communication fails or a rank is asked for an id outside
// its part (bounds that disagree with the parts loaded); it will panic if
// an id lies outside [bounds[0], bounds[len(bounds)−1]).
func (part *Part) AskOrigIDs(c collective.Comm, bounds []int64, rc int, ids []int64) ([]int64, error) {
	if rc < 1 || c.Size() != (len(bounds)-1)*rc {
		return nil, fmt.Errorf("graph: AskOrigIDs: %d run parts with replication %d for %d ranks", len(bounds)-1, rc, c.Size())
	}
	col := c.Rank() % rc
	owner := func(v int64) int { return collective.BlockOf(bounds, v)*rc + col }
	return collective.Halo(c, ids, owner, func(v int64) (int64, bool) {
		if v < part.Lo || v >= part.Hi {
			return 0, false
		}
		return part.OrigIDs[v-part.Lo], true
	})
}
