package metrics

// Calibration is the final record of gnnmpi predict --calibrate: the
// fitted network model's links by kind of call (allreduce, bcast, …) and
// the file the model was written to.
type Calibration struct {
	Run
	Network map[string]Link `json:"network"`
	Out     string          `json:"out"`
}

// Link is the fitted (or nominal) cost of one kind of call (perfmodel.Link
// is this type).
type Link struct {
	Alpha   float64 `json:"alpha_s"`         // seconds per latency step
	Beta    float64 `json:"beta_s_per_byte"` // seconds per byte moved by a rank
	R2      float64 `json:"r2"`              // of the fit; 0 for a preset
	Samples int     `json:"samples"`         // calibration samples fitted; 0 for a preset
}

// Network is a network model, the file of gnnmpi predict --calibrate
// --out FILE that gnnmpi predict --net reads back: a Link per kind of
// call (perfmodel.Network writes and reads itself as this type).
type Network struct {
	Name    string          `json:"name"`
	Source  string          `json:"source"` // "preset" or "calibration"
	Links   map[string]Link `json:"links"`
	Samples []NetworkSample `json:"samples,omitempty"` // absent for a preset
}

// NetworkSample is one calibration measurement: a call of Kind among P
// ranks that moved Bytes on the busiest rank took Seconds (the slowest
// rank's median); perfmodel.Sample as the network file writes it.
type NetworkSample struct {
	Kind    string  `json:"kind"`
	P       int     `json:"p"`
	Bytes   float64 `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// Traffic is the calls and bytes (max of sent and received) of one kind of
// call on one rank in one epoch (perfmodel.Traffic is this type).
type Traffic struct {
	Calls float64 `json:"calls"`
	Bytes float64 `json:"bytes"`
}

// PhaseFit is the fitted compute of one phase: Gamma[0] seconds per epoch,
// then seconds per unit (perfmodel.UnitNames); perfmodel.PhaseFit is this
// type.
type PhaseFit struct {
	Gamma []float64 `json:"gamma"`
	R2    float64   `json:"r2"`
}

// PhaseTime is one phase's predicted seconds (perfmodel.PhaseTime is this
// type).
type PhaseTime struct {
	Comm    float64 `json:"comm_s"`
	Compute float64 `json:"compute_s"`
}
