package train

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/gnn"
)

// requireSettings checks that err holds a SettingError whose message (with
// the settings' Go names) contains msg and which names settings, in order.
func requireSettings(t *testing.T, err error, msg string, settings ...Setting) {
	t.Helper()
	var se *SettingError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Error(), msg)
	require.Equal(t, settings, se.Settings())
}

func TestSettingError(t *testing.T) {
	cause := errors.New("no such file")
	flag := func(s Setting) string { return "--" + strings.ToLower(string(s)) }
	for _, tc := range []struct {
		name      string
		err       *SettingError
		msg, flag string // Error and Message(flag)
		settings  []Setting
		wraps     []error
	}{
		{
			name:     "one setting",
			err:      settingErrorf("train: %s %s needs a square number of ranks, not %d", SettingTopology, Topology2D, 3),
			msg:      "train: Topology 2d needs a square number of ranks, not 3",
			flag:     "train: --topology 2d needs a square number of ranks, not 3",
			settings: []Setting{SettingTopology},
		},
		{
			name:     "repeated settings and a nested name",
			err:      settingErrorf("use %s %s, not %s; or %s %s", SettingModel, "gcn", "sage", SettingModel, "gat"),
			msg:      "use Model.Kind gcn, not sage; or Model.Kind gat",
			flag:     "use --model.kind gcn, not sage; or --model.kind gat",
			settings: []Setting{SettingModel, SettingModel},
		},
		{
			name:     "wrapped errors",
			err:      settingErrorf("%s %q: %w (%w)", SettingPartition, "x.book", cause, gnn.ErrUnsupported),
			msg:      `Partition "x.book": no such file (` + gnn.ErrUnsupported.Error() + ")",
			flag:     `--partition "x.book": no such file (` + gnn.ErrUnsupported.Error() + ")",
			settings: []Setting{SettingPartition},
			wraps:    []error{cause, gnn.ErrUnsupported},
		},
		{
			name: "no setting",
			err:  settingErrorf("plain %d", 1),
			msg:  "plain 1",
			flag: "plain 1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.msg, tc.err.Error())
			require.Equal(t, tc.flag, tc.err.Message(flag))
			require.Equal(t, tc.settings, tc.err.Settings())
			require.Equal(t, tc.wraps, tc.err.Unwrap())
			for _, w := range tc.wraps {
				require.ErrorIs(t, tc.err, w)
			}
		})
	}
}

// ErrorSettings is sorted, without repetitions, and holds the settings
// that the validation errors name.
func TestErrorSettings(t *testing.T) {
	require.True(t, slices.IsSorted(ErrorSettings), "sorted")
	require.Len(t, slices.Compact(slices.Clone(ErrorSettings)), len(ErrorSettings), "no repetitions")

	cfg := testConfig("sage")
	cfg.GlobalBatchSize = 64
	err := cfg.Validate()
	requireSettings(t, err, "give a batch size per rank (", SettingBatchSize, SettingGlobalBatchSize)
	for _, s := range err.(*SettingError).Settings() {
		require.Contains(t, ErrorSettings, s)
	}
}
