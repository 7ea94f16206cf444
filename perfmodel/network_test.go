package perfmodel

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

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
