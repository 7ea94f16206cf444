package metrics

import (
	"fmt"
	"strings"
)

// GPUCheck is the final record of gnnmpi gpucheck.
type GPUCheck struct {
	Run
	// GPUCheck is the suite's report, as its --report file spells it.
	GPUCheck GPUCheckReport `json:"gpucheck"`
}

// GPUCheckRow is one row of gnnmpi gpucheck's table: a check, its verdict
// over all ranks (FAIL if any rank failed, SKIP if every rank skipped,
// else PASS) and rank 0's detail and numbers (gpucheck.Row is this type).
type GPUCheckRow struct {
	Name        string             `json:"name"`
	Result      string             `json:"result"`
	RanksFailed int64              `json:"ranks_failed"`
	Detail      string             `json:"detail,omitempty"`
	Numbers     map[string]float64 `json:"numbers,omitempty"`
}

// GPUCheckReport is the outcome of the GPU check suite: the device, the
// communicator and every row, with the counts of each verdict
// (gpucheck.Report is this type).
type GPUCheckReport struct {
	Device     string        `json:"device"`
	Capability string        `json:"capability"`
	Ranks      int           `json:"ranks"`
	Backend    string        `json:"backend"`
	Checks     []GPUCheckRow `json:"checks"`
	Passed     int           `json:"passed"`
	Failed     int           `json:"failed"`
	Skipped    int           `json:"skipped"`
}

// Summary returns the row's detail (its first line), or a line made of
// its numbers for the benchmark and training rows.
func (g GPUCheckRow) Summary() string {
	if g.Detail != "" {
		s, _, _ := strings.Cut(g.Detail, "\n")
		return s
	}
	n := g.Numbers
	if n == nil {
		return ""
	}
	if _, ok := n["epochs"]; ok {
		return fmt.Sprintf("%.0f epochs, last loss GPU %.6g CPU %.6g, validation loss GPU %.6g CPU %.6g; median epoch GPU %.3gs CPU %.3gs", n["epochs"],
			n[fmt.Sprintf("gpu_loss_%.0f", n["epochs"])], n[fmt.Sprintf("cpu_loss_%.0f", n["epochs"])], n["gpu_val_loss"], n["cpu_val_loss"],
			n["gpu_epoch_s"], n["cpu_epoch_s"])
	}
	link := "link bandwidth unknown"
	if n["link_gbps"] > 0 {
		link = fmt.Sprintf("%.0f%% / %.0f%% of %.1f GB/s", 100*n["zero_copy_gbps"]/n["link_gbps"],
			100*n["cpu_gather_copy_gbps"]/n["link_gbps"], n["link_gbps"])
	}
	return fmt.Sprintf("zero-copy %.2f GB/s, CPU gather+copy %.2f GB/s (%s)", n["zero_copy_gbps"], n["cpu_gather_copy_gbps"], link)
}
