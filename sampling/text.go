package sampling

import (
	"bufio"
	"fmt"
	"io"
)

// WriteText writes m as text (README, Data formats): a header line naming
// minibatch batch of epoch epoch, its sampling key and the sampler kind,
// then the seeds, then per block (input layer first) its sizes, its
// sources' ids and one line per edge "dst src", with the edge's weight
// (%.17g) when the block has values (LADIES). Vertices are written as name
// gives them: their global ids, or a partitioned dataset's original ids.
// It returns the first write error.
func (m *MiniBatch) WriteText(dst io.Writer, epoch, batch int, key uint64, kind Kind, name func(int64) int64) error {
	w := bufio.NewWriter(dst)
	fmt.Fprintf(w, "# gnnmpi minibatch %d of epoch %d, key %#x, sampler %s, %d blocks\n", batch, epoch, key, kind, len(m.Blocks))
	fmt.Fprintf(w, "seeds %d", len(m.Seeds))
	for _, v := range m.Seeds {
		fmt.Fprintf(w, " %d", name(v))
	}
	fmt.Fprintln(w)
	for l, b := range m.Blocks {
		fmt.Fprintf(w, "block %d dst %d src %d edges %d\n", l, len(b.Dst), len(b.Src), b.Adj.NNZ())
		fmt.Fprint(w, "src")
		for _, v := range b.Src {
			fmt.Fprintf(w, " %d", name(v))
		}
		fmt.Fprintln(w)
		for i, v := range b.Dst {
			for q := b.Adj.Indptr[i]; q < b.Adj.Indptr[i+1]; q++ {
				if b.Adj.Values != nil {
					fmt.Fprintf(w, "%d %d %.17g\n", name(v), name(b.Src[b.Adj.Indices[q]]), b.Adj.Values[q])
				} else {
					fmt.Fprintf(w, "%d %d\n", name(v), name(b.Src[b.Adj.Indices[q]]))
				}
			}
		}
	}
	return w.Flush()
}
