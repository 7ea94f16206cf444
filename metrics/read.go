package metrics

import (
	"encoding/json"
	"fmt"
)

// TrainFinal is a decoded final record of gnnmpi train: exactly one of
// Minibatch and Full is set.
type TrainFinal struct {
	Minibatch *MinibatchFinal
	Full      *FullFinal
}

// Run returns the Run of the record that is set.
func (t TrainFinal) Run() *Run {
	if t.Full != nil {
		return &t.Full.Run
	}
	return &t.Minibatch.Run
}

// Training returns the Training of the record that is set.
func (t TrainFinal) Training() *Training {
	if t.Full != nil {
		return &t.Full.Training
	}
	return &t.Minibatch.Training
}

// DecodeTrainFinal decodes the final record of a train run (the --json
// object or the last line of the --metrics file). A record whose
// config.mode is graph, pipe or hybrid is a FullFinal; one without a mode
// (minibatch training) a MinibatchFinal. It fails on a record of another
// command.
func DecodeTrainFinal(b []byte) (TrainFinal, error) {
	var probe struct {
		Command string `json:"command"`
		Config  struct {
			Mode *string `json:"mode"`
		} `json:"config"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return TrainFinal{}, err
	}
	if probe.Command != "train" {
		return TrainFinal{}, fmt.Errorf("not the final metrics of gnnmpi train (command %q)", probe.Command)
	}
	if m := probe.Config.Mode; m != nil && *m != "minibatch" {
		var f FullFinal
		if err := json.Unmarshal(b, &f); err != nil {
			return TrainFinal{}, err
		}
		return TrainFinal{Full: &f}, nil
	}
	var f MinibatchFinal
	if err := json.Unmarshal(b, &f); err != nil {
		return TrainFinal{}, err
	}
	return TrainFinal{Minibatch: &f}, nil
}
