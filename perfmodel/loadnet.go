package perfmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// LoadNetwork returns the network named by s: a preset (PresetNames) or a
// calibration file read by read (os.ReadFile for a file system; the
// package itself does no I/O), checked by Validate. An empty s, or a name
// that is neither a preset nor a readable file, is an error listing the
// presets.
func LoadNetwork(s string, read func(name string) ([]byte, error)) (*Network, error) {
	presets := strings.Join(PresetNames(), ", ")
	if s == "" {
		return nil, fmt.Errorf("no network given (a calibration file or a preset: %s)", presets)
	}
	if slices.Contains(PresetNames(), s) {
		return Preset(s)
	}
	b, err := read(s)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: neither a file nor a preset (%s)", s, presets)
		}
		return nil, err
	}
	var n Network
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return &n, nil
}
