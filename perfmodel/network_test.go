package perfmodel

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

// A network's file is the metrics' Network: the keys, their order and the
// absence of samples in a preset are those the files written so far have,
// and it reads back to the same network.
func TestNetworkJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  Network
		want string
	}{
		{
			"preset",
			Network{Name: "n", Source: "preset", Links: map[Kind]Link{Bcast: {Alpha: 1, Beta: 2}, Allreduce: {Alpha: 3}}},
			`{"name":"n","source":"preset","links":{"allreduce":{"alpha_s":3,"beta_s_per_byte":0,"r2":0,"samples":0},"bcast":{"alpha_s":1,"beta_s_per_byte":2,"r2":0,"samples":0}}}`,
		},
		{
			"calibration",
			Network{Name: "c", Source: "calibration", Links: map[Kind]Link{Barrier: {Alpha: 1, R2: 0.5, Samples: 1}},
				Samples: []Sample{{Kind: Barrier, P: 2, Bytes: 0, Seconds: 0.25}}},
			`{"name":"c","source":"calibration","links":{"barrier":{"alpha_s":1,"beta_s_per_byte":0,"r2":0.5,"samples":1}},"samples":[{"kind":"barrier","p":2,"bytes":0,"seconds":0.25}]}`,
		},
		{"empty", Network{}, `{"name":"","source":"","links":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(&tc.net)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
			var back Network
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, tc.net, back)
		})
	}
}

// LoadNetwork names presets, reads and validates files, and says why a
// name is neither.
func TestLoadNetwork(t *testing.T) {
	files := map[string][]byte{"bad.json": []byte("{"), "empty.json": []byte(`{"name":"x"}`)}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
	n, err := LoadNetwork("25gbe", read)
	require.NoError(t, err)
	require.Equal(t, "25gbe", n.Name)
	pre, err := Preset("25gbe")
	require.NoError(t, err)
	require.Equal(t, pre, n)
	good, err := json.Marshal(pre)
	require.NoError(t, err)
	files["good.json"] = good
	n, err = LoadNetwork("good.json", read)
	require.NoError(t, err)
	require.Equal(t, pre, n)
	for name, want := range map[string]string{
		"":           "no network given",
		"none.json":  "none.json: neither a file nor a preset (10gbe, 25gbe, ib-hdr100)",
		"bad.json":   "bad.json: unexpected end of JSON input",
		"empty.json": "empty.json: ",
	} {
		_, err := LoadNetwork(name, read)
		require.ErrorContains(t, err, want, name)
	}
}
