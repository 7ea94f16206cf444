package metrics

// Calibration is the final record of gnnmpi predict --calibrate: the
// fitted network model's links by kind of call (allreduce, bcast, …) and
// the file the model was written to.
type Calibration struct {
	Run
	Network map[string]Link `json:"network"`
	Out     string          `json:"out"`
}

// Link is the fitted cost of one kind of call; its fields are those of
// perfmodel.Link, in order, so that the writer converts one to the other.
type Link struct {
	Alpha   float64 `json:"alpha_s"`         // seconds per latency step
	Beta    float64 `json:"beta_s_per_byte"` // seconds per byte moved by a rank
	R2      float64 `json:"r2"`              // of the fit
	Samples int     `json:"samples"`         // calibration samples fitted
}
