package metrics

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// An epoch without evaluation writes null accuracies and validation loss;
// an evaluated one their values.
func TestEpochNulls(t *testing.T) {
	acc := 0.5
	for _, tc := range []struct {
		name string
		rec  Epoch
		want string
	}{
		{"not evaluated", Epoch{Epoch: 1}, `null`},
		{"evaluated", Epoch{Epoch: 1, ValAcc: &acc, TestAcc: &acc, ValLoss: &acc}, `0.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.rec)
			require.NoError(t, err)
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &m))
			for _, k := range []string{"val_acc", "test_acc", "val_loss"} {
				require.JSONEq(t, tc.want, string(m[k]), k)
			}
			require.NotContains(t, m, "gpu_reads")
		})
	}
}

// Summarize sums the sent bytes and takes the maxima over ranks, overall
// and per phase.
func TestSummarize(t *testing.T) {
	s := Summarize([]RankComm{
		{PhaseGrad: {"allreduce": {Calls: 1, SentBytes: 10, RecvBytes: 10}}, PhaseFetch: {"alltoallv": {Calls: 1, SentBytes: 3, RecvBytes: 7}}},
		{PhaseGrad: {"allreduce": {Calls: 1, SentBytes: 10, RecvBytes: 10}}, PhaseFetch: {"alltoallv": {Calls: 1, SentBytes: 7, RecvBytes: 3}}},
	})
	require.Len(t, s.PerRank, 2)
	require.Equal(t, int64(30), s.TotalBytes)
	require.Equal(t, int64(17), s.MaxSentBytes)
	require.Equal(t, int64(17), s.MaxRecvBytes)
	require.Equal(t, map[string]PhaseBytes{
		PhaseGrad:  {TotalSent: 20, MaxSent: 10, MaxRecv: 10},
		PhaseFetch: {TotalSent: 10, MaxSent: 7, MaxRecv: 7},
	}, s.ByPhase)
}

// DecodeTrainFinal tells the kinds of training apart by config.mode and
// refuses other commands' records.
func TestDecodeTrainFinal(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		full     bool
		err      string
	}{
		{"minibatch", `{"command":"train","config":{"batch_size":32},"ranks":2}`, false, ""},
		{"minibatch mode", `{"command":"train","config":{"mode":"minibatch"}}`, false, ""},
		{"pipe", `{"command":"train","config":{"mode":"pipe","stages":2},"ranks":2}`, true, ""},
		{"other command", `{"command":"fetch"}`, false, `command "fetch"`},
		{"not json", `{`, false, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := DecodeTrainFinal([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.full, f.Full != nil)
			require.Equal(t, !tc.full, f.Minibatch != nil)
			require.Equal(t, "train", f.Run().Command)
			if tc.full {
				require.Equal(t, 2, f.Full.Config.Stages)
			}
		})
	}
}

func TestDataPathSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    DataPath
		want string
	}{
		{"two ranks", DataPath{MinibatchesPerS: []float64{40, 25.5}, GatherGBps: 3, CopyGBps: 12},
			"data path (sample+fetch alone): 25.5 minibatches/s (slowest rank; fastest 40.0); rank 0 gathers 3.00 GB/s, 25% of its 12.0 GB/s copy bandwidth"},
		{"no copy rate", DataPath{MinibatchesPerS: []float64{7}, GatherGBps: 1.5},
			"data path (sample+fetch alone): 7.0 minibatches/s (slowest rank; fastest 7.0); rank 0 gathers 1.50 GB/s, 0% of its 0.0 GB/s copy bandwidth"},
		{"on a GPU", DataPath{MinibatchesPerS: []float64{80.5}, GatherGBps: 24.75, CopyGBps: 6.1, OnDevice: true},
			"data path (sample+fetch alone): 80.5 minibatches/s (slowest rank; fastest 80.5); rank 0's GPU gathers 24.75 GB/s from its feature tiers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Summary(); got != tc.want {
				t.Errorf("got: %q want: %q", got, tc.want)
			}
		})
	}
}

// An epoch resumed inside itself says where in its record; any other
// epoch's record has no from_step.
func TestEpochRecordFromStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		from int
		want string // the key and value in the JSON record, or "" for none
	}{
		{"whole epoch", 0, ""},
		{"resumed at step 12", 12, `"from_step":12`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := EpochStats{Epoch: 2, Batches: 70, FromStep: tc.from}
			raw, err := json.Marshal(st.Record())
			require.NoError(t, err)
			if tc.want == "" {
				require.NotContains(t, string(raw), "from_step")
			} else {
				require.Contains(t, string(raw), tc.want)
			}
		})
	}
}
