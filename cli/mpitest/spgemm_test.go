package mpitest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
)

// spgemmOut is the part of `gnnmpi spgemm --json` the tests compare.
type spgemmOut struct {
	SpGEMM struct {
		NNZC        int64   `json:"nnz_c"`
		SumC        float64 `json:"sum_c"`
		Checksum    string  `json:"checksum"`
		Verified    *bool   `json:"verified"`
		SentPerRank []int64 `json:"sent_bytes_per_rank"`
		RecvPerRank []int64 `json:"recv_bytes_per_rank"`
	} `json:"spgemm"`
	Ranks int `json:"ranks"`
}

func decodeSpGEMM(t *testing.T, r result) spgemmOut {
	t.Helper()
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	var o spgemmOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &o), "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	return o
}

// Every distributed SpGEMM under mpirun verifies against the local product
// (--verify: every rank's block, exactly) and reports the nnz, sum and
// checksum of the local product computed by a separate in-process run; each
// rank's bytes equal those of the same run on in-process ranks. On an
// R-MAT graph (scale 10) and Cora, A·A, at np = 1, 2, 4, and for R-MAT
// also at 3, 6, 8 and 9 (1.5D with its default c, 2D on 1×3, 2×3, 2×4 and
// 3×3 grids).
func TestSpGEMMMatchesLocal(t *testing.T) {
	skipUnlessMPI(t)
	dir := t.TempDir()
	rm, err := graph.RMAT(graph.DefaultRMAT(10, 16))
	require.NoError(t, err)
	cora, err := graph.Load(filepath.Join(root, "data", "cora"), graph.ReadOptions{NoFeatures: true, NoLabels: true})
	require.NoError(t, err)
	for _, in := range []struct {
		name string
		path string
	}{{"rmat10", filepath.Join(dir, "rmat10.mtx")}, {"cora", filepath.Join(dir, "cora.mtx")}} {
		adj := rm
		if in.name == "cora" {
			adj = cora.Adj
		}
		require.NoError(t, graph.WriteMatrixMarket(in.path, adj))
		want := decodeSpGEMM(t, local(t, "spgemm", "--a", in.path, "--square", "--algo", "local", "--json")).SpGEMM
		require.NotZero(t, want.NNZC)
		nps := []int{1, 2, 4}
		if in.name == "rmat10" {
			nps = append(nps, 3, 6, 8, 9)
		}
		for _, np := range nps {
			for _, algo := range []string{"1d", "1.5d", "2d"} {
				t.Run(fmt.Sprintf("%s/np=%d/%s", in.name, np, algo), func(t *testing.T) {
					args := []string{"spgemm", "--a", in.path, "--square", "--algo", algo, "--verify", "--json"}
					m := decodeSpGEMM(t, mpirun(t, 2*time.Minute, np, bin, args...))
					require.Equal(t, np, m.Ranks)
					got := m.SpGEMM
					require.NotNil(t, got.Verified)
					require.True(t, *got.Verified)
					require.Equal(t, want.NNZC, got.NNZC)
					require.Equal(t, want.SumC, got.SumC)
					require.Equal(t, want.Checksum, got.Checksum)
					l := decodeSpGEMM(t, local(t, append([]string{"--ranks", fmt.Sprint(np)}, args...)...)).SpGEMM
					require.Equal(t, l.SentPerRank, got.SentPerRank)
					require.Equal(t, l.RecvPerRank, got.RecvPerRank)
					if np > 1 {
						require.NotZero(t, got.SentPerRank[np-1])
					}
				})
			}
		}
	}
}
