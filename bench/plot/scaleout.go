package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// scaleoutPoint is one run of bench/scaleout.sh reduced over its ranks:
// the largest peak RSS and the largest state bytes of a rank.
type scaleoutPoint struct {
	np          int
	peak, state float64
}

// scaleoutRuns groups the rows (one per rank) by graph and command (1.5d
// topology only) and reduces each run to its largest rank.
func scaleoutRuns(rows []map[string]string) map[string][]scaleoutPoint {
	byRun := map[string]map[int]*scaleoutPoint{}
	for _, r := range rows {
		if r["topology"] != "1.5d" || num(r, "peak_rss_bytes") <= 0 {
			continue
		}
		key := r["graph"] + " " + r["command"]
		np, err := strconv.Atoi(r["np"])
		if err != nil {
			continue
		}
		if byRun[key] == nil {
			byRun[key] = map[int]*scaleoutPoint{}
		}
		pt := byRun[key][np]
		if pt == nil {
			pt = &scaleoutPoint{np: np}
			byRun[key][np] = pt
		}
		state := num(r, "topology_bytes") + num(r, "features_bytes") + num(r, "cache_bytes") + num(r, "model_bytes")
		pt.peak, pt.state = max(pt.peak, num(r, "peak_rss_bytes")), max(pt.state, state)
	}
	out := map[string][]scaleoutPoint{}
	for key, m := range byRun {
		for _, pt := range m {
			out[key] = append(out[key], *pt)
		}
		sort.Slice(out[key], func(a, b int) bool { return out[key][a].np < out[key][b].np })
	}
	return out
}

// scaleout draws bench/scaleout.sh's CSV: per graph, the largest rank's
// peak RSS (and, for training, its state bytes) as a fraction of the np 1
// run's against the rank count, log-log, with the ideal 1/p; one line per
// command.
func scaleout(rows []map[string]string, out string) error {
	runs := scaleoutRuns(rows)
	if len(runs) == 0 {
		return fmt.Errorf("no successful 1.5d runs")
	}
	var graphs []string
	for _, r := range rows {
		if _, ok := runs[r["graph"]+" train"]; ok && !slices.Contains(graphs, r["graph"]) {
			graphs = append(graphs, r["graph"])
		} else if _, ok := runs[r["graph"]+" sample"]; ok && !slices.Contains(graphs, r["graph"]) {
			graphs = append(graphs, r["graph"])
		}
	}
	const w = 5.5 * vg.Inch
	img, dc, tiles := grid(1, len(graphs), vg.Length(len(graphs))*w, 4*vg.Inch)
	plots := [][]*plot.Plot{make([]*plot.Plot, len(graphs))}
	for i, g := range graphs {
		p := plot.New()
		p.Title.Text = g + ": largest rank's memory / np 1's"
		p.X.Label.Text = "ranks"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = powerTicks(1, 64), powerTicks(1.0/64, 1)
		p.Legend.Top = true
		n, maxNP := 0, 1
		line := func(name string, pts []scaleoutPoint, y func(scaleoutPoint) float64) error {
			if len(pts) == 0 || pts[0].np != 1 || y(pts[0]) <= 0 {
				return nil
			}
			var xy plotter.XYs
			for _, pt := range pts {
				xy = append(xy, plotter.XY{X: float64(pt.np), Y: y(pt) / y(pts[0])})
				maxNP = max(maxNP, pt.np)
			}
			_, _, err := addLine(p, name, xy, n, false)
			n++
			return err
		}
		for _, cmd := range []string{"train", "sample"} {
			pts := runs[g+" "+cmd]
			if err := line(cmd+" peak RSS", pts, func(pt scaleoutPoint) float64 { return pt.peak }); err != nil {
				return err
			}
			if cmd == "train" {
				if err := line("train state bytes", pts, func(pt scaleoutPoint) float64 { return pt.state }); err != nil {
					return err
				}
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: no run at np 1 to scale from", g)
		}
		ideal := plotter.XYs{{X: 1, Y: 1}, {X: float64(maxNP), Y: 1 / float64(maxNP)}}
		if err := addIdeal(p, "ideal 1/p", ideal); err != nil {
			return err
		}
		plots[0][i] = p
	}
	return drawAll(img, dc, tiles, plots, out)
}

// powerTicks marks the powers of two from lo to hi (the rank counts, and
// the fractions 1/p of the ideal line).
func powerTicks(lo, hi float64) plot.ConstantTicks {
	var t plot.ConstantTicks
	for x := lo; x <= hi; x *= 2 {
		t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
	}
	return t
}
