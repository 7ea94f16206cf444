package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/model"
	"gnnmpi/train"
)

// The fetch command reports every (policy, α) point; on Cora the VIP cache
// fetches no more rows than the degree cache at any α and nothing once
// every reachable vertex fits; replication 2 at 4 ranks fetches less than
// none at the same α = 0; f16 halves the dense row bytes.
func TestFetchCommand(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	run := func(p int, args ...string) []train.SweepPoint {
		out, err := runCmd(t, p, "fetch", append([]string{"--data", data, "--batch-size", "32", "--partition", "metis"}, args...)...)
		require.NoError(t, err)
		var obj struct {
			Points []train.SweepPoint `json:"points"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
		return obj.Points
	}
	pts := run(4, "--cache", "none,degree,vip", "--cache-frac", "0,0.1,0.5,4")
	require.Len(t, pts, 1+4+4)
	none := pts[0]
	require.Equal(t, string(alltoall.CacheNone), none.Cache)
	require.Positive(t, none.RemoteRows)
	for k := range 4 {
		deg, vip := pts[1+k], pts[5+k]
		require.Equal(t, deg.CacheFrac, vip.CacheFrac)
		require.Equal(t, none.FetchRows, vip.FetchRows)
		require.LessOrEqual(t, vip.RemoteRows, deg.RemoteRows, "α %g", vip.CacheFrac)
	}
	require.Equal(t, none.RemoteRows, pts[1].RemoteRows, "α = 0 is no cache")
	require.Zero(t, pts[8].RemoteRows)

	repl := run(4, "--cache", "none", "--cache-frac", "0", "--replication", "2")
	require.Less(t, repl[0].RemoteRows, none.RemoteRows)
	// f16 (dense rows: auto means dense with f16) against dense f32.
	full := run(4, "--cache", "none", "--cache-frac", "0", "--feature-format", "dense")
	half := run(4, "--cache", "none", "--cache-frac", "0", "--feature-dtype", "f16")
	require.Equal(t, none.RemoteRows, half[0].RemoteRows)
	require.Equal(t, full[0].FetchBytes-2*1433*none.RemoteRows, half[0].FetchBytes)

	_, err := runCmd(t, 2, "fetch", "--data", data, "--cache", "lru")
	require.ErrorContains(t, err, `unknown cache policy "lru"`)
}

// fetch and train share their sampling and feature-store flags and their
// defaults: without --fanouts, fetch samples train's 25,10.
func TestFetchSharesTrainDefaults(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	out, err := runCmd(t, 2, "fetch", "--data", data, "--cache", "none", "--cache-frac", "0", "--global-batch-size", "64")
	require.NoError(t, err)
	var obj struct {
		Config struct {
			Fanouts   []int `json:"fanouts"`
			BatchSize int   `json:"batch_size"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
	require.Equal(t, train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch.Fanouts, obj.Config.Fanouts)
	require.Equal(t, 32, obj.Config.BatchSize, "--global-batch-size 64 on 2 ranks")
	_, err = runCmd(t, 2, "fetch", "--data", data, "--sampler", "fastgcn")
	require.ErrorContains(t, err, `unknown sampler "fastgcn" (want sage or ladies)`)
}
