package main

import (
	"fmt"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// throughputLabel names a run of bench/throughput.sh: "torch",
// "torch embedding_bag" (the peer's first-layer form), "gnnmpi np2",
// "gnnmpi csr np2" (with its variant).
func throughputLabel(r map[string]string) string {
	l := r["system"]
	if r["variant"] != "" {
		l += " " + r["variant"]
	}
	if r["system"] == "torch" {
		return l
	}
	return l + " np" + r["np"]
}

// throughput draws bench/throughput.sh's CSV: one row of panels per dataset,
// with the median epoch seconds of every run split into its phases (sample,
// fetch or gather, compute, grad, and the rest of the epoch as "other";
// stacked bars, each gnnmpi run labelled with its time against the
// strongest peer's: the fastest PyTorch variant on the dataset) and the
// test accuracy after the same epochs.
func throughput(rows []map[string]string, out string) error {
	var ok []map[string]string
	for _, r := range rows {
		if num(r, "median_epoch_s") > 0 {
			r["other_s"] = fmt.Sprint(max(0, num(r, "median_epoch_s")-
				num(r, "sample_s")-num(r, "fetch_s")-num(r, "compute_s")-num(r, "grad_s")))
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return fmt.Errorf("no successful runs")
	}
	datasets := groups(ok, "dataset")
	const w = 5 * vg.Inch
	img, dc, tiles := grid(len(datasets), 2, 2*w, vg.Length(len(datasets))*3.4*vg.Inch)
	plots := make([][]*plot.Plot, len(datasets))
	for i, ds := range datasets {
		sel := where(ok, "dataset", ds)
		// The peer first, then gnnmpi by variant and rank count.
		sort.SliceStable(sel, func(a, b int) bool {
			x, y := sel[a], sel[b]
			if (x["system"] == "torch") != (y["system"] == "torch") {
				return x["system"] == "torch"
			}
			if x["variant"] != y["variant"] {
				return x["variant"] < y["variant"]
			}
			return num(x, "np") < num(y, "np")
		})
		var peer float64 // the strongest peer's epoch
		for _, r := range sel {
			if r["system"] == "torch" && (peer == 0 || num(r, "median_epoch_s") < peer) {
				peer = num(r, "median_epoch_s")
			}
		}
		names := make([]string, len(sel))
		acc := make(plotter.Values, len(sel))
		for k, r := range sel {
			names[k] = throughputLabel(r)
			if peer > 0 && r["system"] != "torch" {
				names[k] += fmt.Sprintf(" (%.2f×)", num(r, "median_epoch_s")/peer)
			}
			acc[k] = 100 * num(r, "test_acc")
		}
		tp, err := stacked(ds+": seconds per epoch (slowest rank)", names, sel,
			[]string{"sample_s", "fetch_s", "compute_s", "grad_s", "other_s"}, 1)
		if err != nil {
			return err
		}
		ap := plot.New()
		ap.Title.Text = ds + ": test accuracy (%) after " + sel[0]["epochs"] + " epochs"
		b, err := plotter.NewBarChart(acc, vg.Points(20))
		if err != nil {
			return err
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(5)
		ap.Add(b)
		ap.NominalX(names...)
		ap.X.Min, ap.X.Max = -0.7, float64(len(names))-0.3
		ap.Y.Min, ap.Y.Max = 0, 105
		// The bars' values, since differences of a point matter.
		xys := make(plotter.XYs, len(acc))
		text := make([]string, len(acc))
		for k, a := range acc {
			xys[k] = plotter.XY{X: float64(k), Y: a}
			text[k] = fmt.Sprintf("%.1f", a)
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text})
		if err != nil {
			return err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].XAlign = draw.XCenter
		}
		ap.Add(lb)
		rotate([]*plot.Plot{tp, ap})
		plots[i] = []*plot.Plot{tp, ap}
	}
	return drawAll(img, dc, tiles, plots, out)
}
