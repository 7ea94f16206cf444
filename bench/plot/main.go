// Command plot draws the PNG charts of the bench/ scripts from their CSV
// files with gonum/plot.
//
//	go run ./bench/plot phases bench/out/train.csv bench/out/train.png
//	go run ./bench/plot gemm bench/out/gemm.csv bench/out/gemm.png
//	go run ./bench/plot spgemm bench/out/spgemm.csv bench/out/spgemm.png
//	go run ./bench/plot sample bench/out/sample.csv bench/out/sample.png
//	go run ./bench/plot fetch bench/out/fetch.csv bench/out/fetch.png
//	go run ./bench/plot pipe bench/out/pipe.csv bench/out/pipe.png
//	go run ./bench/plot pipe-table bench/out/pipe.csv -   (Markdown; "-" is stdout)
//	go run ./bench/plot throughput bench/out/throughput.csv bench/out/throughput.png
//	go run ./bench/plot scaleout bench/out/scaleout.csv bench/out/scaleout.png
//	go run ./bench/plot scaling bench/out/scaling.csv bench/out/scaling.png
//	go run ./bench/plot scaling-report bench/out/scaling.csv bench/out/scaling.md   (Markdown; "-" is stdout)
//
// phases: per dataset, the epoch time of the slowest rank split into
// sample, fetch, compute and grad (stacked bars) against the rank count,
// with the bytes sent per epoch beside it. gemm: GFLOP/s of each GEMM shape
// for each implementation (grouped bars). spgemm: per input and product
// (A·A, Q·A), the MFLOP/s of every configuration of bench/spgemm.sh (one
// bar each, slowest rank, median of the reps) beside the MiB sent per
// rank (maximum over ranks). sample: per input and rank count, sampled
// edges/s against the bulk size k for each topology (the plain per-batch
// baseline as a flat line), beside the bytes sent per minibatch. pipe: per
// dataset and model of bench/pipe.sh, the MiB sent per epoch by phase
// (stacked; a cross marks the analytical total) for every mode and rank
// count, beside the test accuracy and the median epoch time. pipe-table:
// the same rows as the README's Markdown table. throughput: per dataset of
// bench/throughput.sh, the epoch time of the PyTorch peer and of gnnmpi at
// each rank count split into phases (stacked bars, with the ratio to the
// peer's time), beside the test accuracy after the same epochs. scaleout:
// per graph of bench/scaleout.sh, the largest rank's peak RSS (and state
// bytes) relative to np 1 against the rank count, with the ideal 1/p.
// scaling: per study and workload of bench/scaling.sh, the speedup (strong)
// or efficiency (weak) over the shared-memory np 1 run against the rank
// count, one line per network. scaling-report: the same runs as the
// generated Markdown report.
package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: plot phases|gemm|spgemm|sample|fetch|pipe|pipe-table|throughput|scaleout|scaling|scaling-report IN.csv OUT")
		os.Exit(2)
	}
	rows, err := readCSV(os.Args[2])
	if err == nil {
		switch os.Args[1] {
		case "phases":
			err = phases(rows, os.Args[3])
		case "gemm":
			err = gemm(rows, os.Args[3])
		case "spgemm":
			err = spgemm(rows, os.Args[3])
		case "sample":
			err = sample(rows, os.Args[3])
		case "fetch":
			err = fetch(rows, os.Args[3])
		case "pipe":
			err = pipeChart(rows, os.Args[3])
		case "pipe-table":
			err = pipeTable(rows, os.Args[3])
		case "throughput":
			err = throughput(rows, os.Args[3])
		case "scaleout":
			err = scaleout(rows, os.Args[3])
		case "scaling":
			err = scaling(rows, os.Args[3])
		case "scaling-report":
			err = scalingReport(rows, os.Args[3])
		default:
			err = fmt.Errorf("unknown chart %q", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "plot: %v\n", err)
		os.Exit(1)
	}
}

// readCSV returns the records as maps from the header's column names.
func readCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no data rows", path)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func num(m map[string]string, k string) float64 {
	v, _ := strconv.ParseFloat(m[k], 64)
	return v
}

func groups(rows []map[string]string, key string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if !seen[r[key]] {
			seen[r[key]] = true
			out = append(out, r[key])
		}
	}
	return out
}

// where returns the rows whose key is val, in order.
func where(rows []map[string]string, key, val string) []map[string]string {
	var out []map[string]string
	for _, r := range rows {
		if r[key] == val {
			out = append(out, r)
		}
	}
	return out
}

// grid returns an image of width×height for rows×cols panels, its canvas
// and the tiles that place the panels.
func grid(rows, cols int, width, height vg.Length) (*vgimg.Canvas, draw.Canvas, draw.Tiles) {
	img := vgimg.New(width, height)
	return img, draw.New(img), draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter}
}

// phases draws, for every dataset, two panels side by side: stacked
// per-phase seconds per epoch, and bytes per epoch by phase, against np.
func phases(rows []map[string]string, out string) error {
	datasets := groups(rows, "dataset")
	const w = 4.5 * vg.Inch
	img, dc, tiles := grid(len(datasets), 2, 2*w, vg.Length(len(datasets))*3.2*vg.Inch)
	plots := make([][]*plot.Plot, len(datasets))
	for i, ds := range datasets {
		sel := where(rows, "dataset", ds)
		sort.Slice(sel, func(a, b int) bool { return num(sel[a], "np") < num(sel[b], "np") })
		names := make([]string, len(sel))
		for k, r := range sel {
			names[k] = "np=" + r["np"]
		}
		tp, err := stacked(ds+": seconds per epoch (slowest rank)", names, sel,
			[]string{"sample_s", "fetch_s", "compute_s", "grad_s"}, 1)
		if err != nil {
			return err
		}
		bp, err := stacked(ds+": MiB sent per epoch (all ranks)", names, sel,
			[]string{"fetch_bytes", "grad_bytes"}, 1.0/(1<<20))
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{tp, bp}
	}
	return drawAll(img, dc, tiles, plots, out)
}

func stacked(title string, names []string, rows []map[string]string, cols []string, scale float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Legend.Top = true
	var below *plotter.BarChart
	for k, c := range cols {
		v := make(plotter.Values, len(rows))
		for i, r := range rows {
			v[i] = num(r, c) * scale
		}
		b, err := plotter.NewBarChart(v, vg.Points(28))
		if err != nil {
			return nil, err
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(k)
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(c, b)
	}
	p.NominalX(names...)
	// Room for the legend on the right of the last bar.
	p.X.Min, p.X.Max = -0.7, float64(len(names))+0.8
	return p, nil
}

// gemm draws GFLOP/s per shape, one bar per implementation.
func gemm(rows []map[string]string, out string) error {
	impls := groups(rows, "impl")
	shapes := groups(rows, "shape")
	p := plot.New()
	p.Title.Text = "f32 GEMM and training-path throughput (GFLOP/s)"
	p.Legend.Top, p.Legend.Left = true, true
	wbar := vg.Points(14)
	for k, im := range impls {
		v := make(plotter.Values, len(shapes))
		for i, s := range shapes {
			for _, r := range rows {
				if r["impl"] == im && r["shape"] == s {
					v[i] = num(r, "gflops")
				}
			}
		}
		b, err := plotter.NewBarChart(v, wbar)
		if err != nil {
			return err
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(k)
		b.Offset = vg.Length(k-len(impls)/2) * wbar
		p.Add(b)
		p.Legend.Add(im, b)
	}
	p.NominalX(shapes...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	img := vgimg.New(vg.Length(len(shapes))*1.4*vg.Inch+2*vg.Inch, 4*vg.Inch)
	p.Draw(draw.New(img))
	return save(img, out)
}

// spgemm draws, for every input and case of bench/spgemm.sh, the MFLOP/s
// of each configuration and the bytes sent per rank. Failed runs (a
// non-empty error column) are left out.
func spgemm(rows []map[string]string, out string) error {
	var ok []map[string]string
	for _, r := range rows {
		if r["error"] == "" && num(r, "seconds") > 0 {
			r["panel"] = r["input"] + " " + r["case"]
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return fmt.Errorf("no successful runs")
	}
	panels := groups(ok, "panel")
	const w = 6 * vg.Inch
	img, dc, tiles := grid(len(panels), 2, 2*w, vg.Length(len(panels))*3.6*vg.Inch)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		sel := where(ok, "panel", pn)
		names := make([]string, len(sel))
		flops := make(plotter.Values, len(sel))
		mib := make(plotter.Values, len(sel))
		for k, r := range sel {
			names[k] = spgemmLabel(r)
			flops[k] = num(r, "mflops")
			mib[k] = num(r, "max_sent_bytes") / (1 << 20)
		}
		var pair []*plot.Plot
		for x, v := range []plotter.Values{flops, mib} {
			p := plot.New()
			p.Title.Text = pn + [2]string{": MFLOP/s (slowest rank)", ": MiB sent, max over ranks"}[x]
			b, err := plotter.NewBarChart(v, vg.Points(9))
			if err != nil {
				return err
			}
			b.LineStyle.Width = 0
			b.Color = plotutil.Color(x)
			p.Add(b)
			p.NominalX(names...)
			p.X.Tick.Label.Rotation = 1.2
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
			pair = append(pair, p)
		}
		plots[i] = pair
	}
	return drawAll(img, dc, tiles, plots, out)
}

// spgemmLabel names a configuration: "local t2", "1.5d np4", "graphblas t1".
func spgemmLabel(r map[string]string) string {
	switch {
	case r["algo"] == "local" || r["tool"] == "graphblas":
		return r["algo"] + " t" + r["threads"]
	case r["tool"] == "scipy":
		return "scipy"
	}
	return r["algo"] + " np" + r["np"]
}

// drawAll aligns plots on the tiles of img's canvas dc, draws them and
// writes img to out as PNG.
func drawAll(img *vgimg.Canvas, dc draw.Canvas, tiles draw.Tiles, plots [][]*plot.Plot, out string) error {
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	return save(img, out)
}

// addLine adds a line with points through xy to p, in the n-th colour of
// plotutil's palette, with a legend entry; dashed draws the line dashed.
func addLine(p *plot.Plot, name string, xy plotter.XYs, n int, dashed bool) (*plotter.Line, *plotter.Scatter, error) {
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, nil, err
	}
	l.Color, s.Color = plotutil.Color(n), plotutil.Color(n)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return l, s, nil
}

// addIdeal adds the dashed reference line through xy to p, named name.
func addIdeal(p *plot.Plot, name string, xy plotter.XYs) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

func save(img *vgimg.Canvas, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sample draws bench/sample.sh's CSV: for every input and rank count,
// sampled edges/s (slowest rank) against k, one line per topology and the
// plain baseline flat, and the KiB sent per minibatch against k.
func sample(rows []map[string]string, out string) error {
	var ok []map[string]string
	var ks []float64
	for _, r := range rows {
		if r["error"] == "" && num(r, "edges_per_s") > 0 {
			r["panel"] = r["input"] + " np " + r["np"]
			if r["sampler"] == "plain" {
				r["line"] = "plain (per batch)"
			} else {
				r["line"] = r["sampler"] + " " + r["topology"]
				if r["topology"] != "replicated" {
					r["line"] += " c=" + r["c"]
				}
				ks = append(ks, num(r, "bulk"))
			}
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 || len(ks) == 0 {
		return fmt.Errorf("no successful runs")
	}
	sort.Float64s(ks)
	kmin, kmax := ks[0], ks[len(ks)-1]
	panels := groups(ok, "panel")
	const w = 5.5 * vg.Inch
	img, dc, tiles := grid(len(panels), 2, 2*w, vg.Length(len(panels))*3.4*vg.Inch)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		var pair []*plot.Plot
		for x, title := range []string{": sampled edges/s (slowest rank)", ": KiB sent per minibatch"} {
			p := plot.New()
			p.Title.Text = pn + title
			p.X.Label.Text = "bulk k"
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Legend.Top, p.Legend.Left = true, true
			p.Y.Min = 0
			sel := where(ok, "panel", pn)
			for n, line := range groups(sel, "line") {
				var pts plotter.XYs
				for _, r := range sel {
					if r["line"] != line {
						continue
					}
					y := num(r, "edges_per_s")
					if x == 1 {
						y = num(r, "bytes_per_minibatch") / 1024
					}
					if r["sampler"] == "plain" {
						pts = append(pts, plotter.XY{X: kmin, Y: y}, plotter.XY{X: kmax, Y: y})
						continue
					}
					pts = append(pts, plotter.XY{X: num(r, "bulk"), Y: y})
				}
				sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
				if _, _, err := addLine(p, line, pts, n, strings.HasPrefix(line, "plain")); err != nil {
					return err
				}
			}
			pair = append(pair, p)
		}
		plots[i] = pair
	}
	return drawAll(img, dc, tiles, plots, out)
}

// fetch draws bench/fetch.sh's CSV: for every dataset and rank count, the
// remote rows fetched per epoch as a fraction of those without a cache,
// against α, one line per cache policy, METIS partitions solid and random
// ones dashed.
func fetch(rows []map[string]string, out string) error {
	none := map[string]float64{} // dataset/np/partition → remote rows without cache
	var ok []map[string]string
	for _, r := range rows {
		if r["error"] != "" || r["cache"] == "" {
			continue
		}
		key := r["dataset"] + "/" + r["np"] + "/" + r["partition"]
		if r["cache"] == "none" {
			none[key] = num(r, "remote_rows")
			continue
		}
		r["key"] = key
		r["panel"] = r["dataset"] + " np " + r["np"]
		r["line"] = r["cache"] + " " + r["partition"]
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return fmt.Errorf("no successful runs")
	}
	panels := groups(ok, "panel")
	const w = 5.5 * vg.Inch
	cols := 2
	nrows := (len(panels) + cols - 1) / cols
	img, dc, tiles := grid(nrows, cols, vg.Length(cols)*w, vg.Length(nrows)*3.6*vg.Inch)
	plots := make([][]*plot.Plot, nrows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	policies := groups(ok, "cache")
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn + ": remote rows per epoch / no cache"
		p.X.Label.Text = "cache size α (rows per rank / (n/parts))"
		p.Y.Min, p.Y.Max = 0, 1.05
		p.Legend.Left = true // the lines fall from the top left
		sel := where(ok, "panel", pn)
		for _, line := range groups(sel, "line") {
			var pts plotter.XYs
			var policy, part string
			for _, r := range sel {
				if r["line"] != line || none[r["key"]] == 0 {
					continue
				}
				policy, part = r["cache"], r["partition"]
				pts = append(pts, plotter.XY{X: num(r, "cache_frac"), Y: num(r, "remote_rows") / none[r["key"]]})
			}
			if len(pts) == 0 {
				continue
			}
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			n := max(slices.Index(policies, policy), 0)
			_, sc, err := addLine(p, line, pts, n, part != "metis")
			if err != nil {
				return err
			}
			sc.Shape = plotutil.Shape(n)
		}
		plots[i/cols][i%cols] = p
	}
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] == nil {
				plots[i][j] = plot.New()
			}
		}
	}
	return drawAll(img, dc, tiles, plots, out)
}

// pipeChart draws bench/pipe.sh's CSV: one row of panels per dataset and
// model; failed runs (a non-empty error column) are left out.
func pipeChart(rows []map[string]string, out string) error {
	var ok []map[string]string
	for _, r := range rows {
		if r["error"] == "" && num(r, "epochs") > 0 {
			r["panel"] = r["dataset"] + " " + r["model"] + " L" + r["layers"]
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return fmt.Errorf("no successful runs")
	}
	panels := groups(ok, "panel")
	const w = 4 * vg.Inch
	img, dc, tiles := grid(len(panels), 3, 3*w, vg.Length(len(panels))*3.4*vg.Inch)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		sel := where(ok, "panel", pn)
		sort.SliceStable(sel, func(a, b int) bool {
			if num(sel[a], "np") != num(sel[b], "np") {
				return num(sel[a], "np") < num(sel[b], "np")
			}
			return num(sel[a], "epochs") < num(sel[b], "epochs")
		})
		names := make([]string, len(sel))
		model := make(plotter.XYs, len(sel))
		acc := make(plotter.Values, len(sel))
		secs := make(plotter.Values, len(sel))
		for k, r := range sel {
			names[k] = r["mode"] + " np" + r["np"]
			if r["mode"] == "hybrid" {
				names[k] += " " + r["pipelines"] + "x" + r["stages"]
			}
			names[k] += " " + r["epochs"] + "ep"
			for _, c := range []string{"act_model", "act_grad_model", "halo_model", "grad_model"} {
				model[k].Y += num(r, c) / (1 << 20)
			}
			model[k].X = float64(k)
			acc[k] = 100 * num(r, "test_acc")
			secs[k] = num(r, "median_epoch_s")
		}
		bp, err := stacked(pn+": MiB sent per epoch", names, sel, []string{"act", "act_grad", "halo", "grad"}, 1.0/(1<<20))
		if err != nil {
			return err
		}
		sc, err := plotter.NewScatter(model)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(5)
		bp.Add(sc)
		bp.Legend.Add("analytical", sc)
		row := []*plot.Plot{bp}
		for x, v := range []plotter.Values{acc, secs} {
			p := plot.New()
			p.Title.Text = [2]string{"test accuracy (%)", "median epoch (s)"}[x]
			b, err := plotter.NewBarChart(v, vg.Points(20))
			if err != nil {
				return err
			}
			b.LineStyle.Width = 0
			b.Color = plotutil.Color(4 + x)
			p.Add(b)
			p.NominalX(names...)
			p.X.Min, p.X.Max = -0.7, float64(len(names))-0.3
			row = append(row, p)
		}
		rotate(row)
		plots[i] = row
	}
	return drawAll(img, dc, tiles, plots, out)
}

// rotate slants the category labels of ps so long names do not overlap.
func rotate(ps []*plot.Plot) {
	for _, p := range ps {
		p.X.Tick.Label.Rotation = 0.6
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
}
