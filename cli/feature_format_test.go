package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/train"
)

// fetch --feature-format csr moves the same rows as dense with a fraction
// of the bytes: on Cora (0/1 features, 18 nonzeros of 1433 a row on
// average) a row is 4 + 4·nnz bytes instead of 4·1433.
func TestFetchFeatureFormat(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	run := func(format string) (train.SweepPoint, string) {
		out, err := runCmd(t, 2, "fetch", "--data", data, "--batch-size", "64", "--partition", "block",
			"--cache", "none", "--cache-frac", "0", "--feature-format", format)
		require.NoError(t, err)
		var obj struct {
			Points []train.SweepPoint `json:"points"`
			Config struct {
				Format string `json:"feature_format"`
			} `json:"config"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
		require.Len(t, obj.Points, 1)
		return obj.Points[0], obj.Config.Format
	}
	dn, df := run("dense")
	sp, sf := run("csr")
	_, af := run("auto")
	require.Equal(t, "dense", df)
	require.Equal(t, "csr", sf)
	require.Equal(t, "csr", af, "Cora is 1.3% nonzero")
	require.Equal(t, dn.RemoteRows, sp.RemoteRows)
	require.Equal(t, dn.FetchRows, sp.FetchRows)
	require.Less(t, sp.FetchBytes*20, dn.FetchBytes, "sparse %g bytes, dense %g", sp.FetchBytes, dn.FetchBytes)

	_, err := runCmd(t, 1, "fetch", "--data", data, "--feature-format", "coo")
	require.ErrorContains(t, err, `unknown feature format "coo"`)
}

// info reports the feature format and density, the same under every
// format and rank count.
func TestInfoFeatureFormat(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	for _, tc := range []struct {
		p      int
		format string
		want   graph.FeatureFormat
	}{{1, "auto", graph.FeatureCSR}, {2, "csr", graph.FeatureCSR}, {3, "dense", graph.FeatureDense}} {
		out, err := runCmd(t, tc.p, "info", "--data", data, "--feature-format", tc.format)
		require.NoError(t, err)
		var obj struct {
			Dataset metrics.DatasetInfo `json:"dataset"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
		in := obj.Dataset
		require.Equal(t, string(tc.want), in.FeatureFormat)
		require.Equal(t, int64(49216), in.FeatureNNZ) // Planetoid Cora's nonzeros
		require.InDelta(t, 49216.0/(2708*1433), in.Density, 1e-12)
	}
}

// convert writes a sparse feature section for sparse data (auto or csr)
// and a dense one for --feature-format dense; either loads back alike.
func TestConvertFeatureFormat(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	want, err := graph.ReadOGB(data, graph.ReadOptions{FeatureFormat: graph.FeatureCSR})
	require.NoError(t, err)
	for _, format := range []string{"auto", "csr", "dense"} {
		out := filepath.Join(t.TempDir(), "cora.gnn")
		_, err := runCmd(t, 1, "convert", "--data", data, "--out", out, "--feature-format", format)
		require.NoError(t, err)
		// Loaded as stored: dense only for the dense file.
		d, m, err := graph.OpenBinary(out, graph.ReadOptions{FeatureFormat: graph.FeatureCSR})
		require.NoError(t, err)
		require.Equal(t, want.FeatCSR, d.FeatCSR, format)
		require.NoError(t, m.Close())
	}
}
