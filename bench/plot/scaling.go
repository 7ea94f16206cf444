package main

import (
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
)

// scalingPoint is one successful run of bench/scaling.sh.
type scalingPoint struct {
	np, hosts int
	seconds   float64 // the workload's metric (epoch, sampling or product seconds)
	maxSent   float64 // bytes sent by the busiest rank
}

// scalingCase is one study and workload of bench/scaling.sh: its runs by
// network, ordered by np, and the single-rank shared-memory baseline
// every network is compared with.
type scalingCase struct {
	study, workload, metric string
	nets                    []string // in CSV order
	runs                    map[string][]scalingPoint
	base                    float64 // seconds of the shm np 1 run (else the first np 1 run, as on a cluster); 0 if missing
}

// scalingCases groups the rows of bench/scaling.sh's CSV by study and
// workload, in CSV order, keeping only runs that exited 0.
func scalingCases(rows []map[string]string) []*scalingCase {
	var out []*scalingCase
	byKey := map[string]*scalingCase{}
	for _, r := range rows {
		np, err := strconv.Atoi(r["np"])
		if err != nil || r["exit_code"] != "0" || num(r, "seconds") <= 0 {
			continue
		}
		key := r["study"] + " " + r["workload"]
		c := byKey[key]
		if c == nil {
			c = &scalingCase{study: r["study"], workload: r["workload"], metric: r["metric"], runs: map[string][]scalingPoint{}}
			byKey[key] = c
			out = append(out, c)
		}
		net := r["net"]
		if !slices.Contains(c.nets, net) {
			c.nets = append(c.nets, net)
		}
		hosts, _ := strconv.Atoi(r["hosts"])
		c.runs[net] = append(c.runs[net], scalingPoint{np: np, hosts: hosts, seconds: num(r, "seconds"), maxSent: num(r, "max_sent_bytes")})
		if np == 1 && (net == "shm" || c.base == 0) {
			c.base = num(r, "seconds")
		}
	}
	for _, c := range out {
		for _, pts := range c.runs {
			sort.Slice(pts, func(a, b int) bool { return pts[a].np < pts[b].np })
		}
	}
	return out
}

// ratio is the case's speedup (strong) or efficiency (weak) at pt: the
// np 1 time (shm where there is one) over pt's.
func (c *scalingCase) ratio(pt scalingPoint) float64 { return c.base / pt.seconds }

// scaling draws bench/scaling.sh's CSV: one panel per study and workload,
// the speedup (strong scaling: t₁/t_p, ideal p) or the efficiency (weak
// scaling: t₁/t_p for a problem grown p-fold, ideal 1) against the rank
// count, one line per network, all relative to the shared-memory np 1 run.
func scaling(rows []map[string]string, out string) error {
	cases := scalingCases(rows)
	var drawn []*scalingCase
	for _, c := range cases {
		if c.base > 0 {
			drawn = append(drawn, c)
		}
	}
	if len(drawn) == 0 {
		return fmt.Errorf("no workload has a successful np 1 run")
	}
	cols := min(4, len(drawn))
	nrows := (len(drawn) + cols - 1) / cols
	const w, h = 4 * vg.Inch, 3.2 * vg.Inch
	img, dc, tiles := grid(nrows, cols, vg.Length(cols)*w, vg.Length(nrows)*h)
	plots := make([][]*plot.Plot, nrows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, c := range drawn {
		p := plot.New()
		p.Title.Text = c.study + ": " + c.workload
		p.X.Label.Text = "ranks"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.Legend.Top = true
		p.Legend.Left = true
		maxNP := 1
		lo, hi := 1.0, 1.0
		for n, net := range c.nets {
			var xy plotter.XYs
			if c.runs[net][0].np != 1 { // every network starts from the np 1 run
				xy = append(xy, plotter.XY{X: 1, Y: 1})
			}
			for _, pt := range c.runs[net] {
				v := c.ratio(pt)
				xy = append(xy, plotter.XY{X: float64(pt.np), Y: v})
				maxNP = max(maxNP, pt.np)
				lo, hi = min(lo, v), max(hi, v)
			}
			_, sc, err := addLine(p, net, xy, n, false)
			if err != nil {
				return err
			}
			sc.Shape = plotutil.Shape(n)
		}
		ideal := plotter.XYs{{X: 1, Y: 1}, {X: float64(maxNP), Y: float64(maxNP)}}
		p.Y.Label.Text = "speedup over np 1"
		if c.study == "weak" {
			ideal[1].Y = 1
			p.Y.Label.Text = "efficiency t₁/t_p"
		}
		hi = max(hi, ideal[1].Y)
		if err := addIdeal(p, "ideal", ideal); err != nil {
			return err
		}
		p.X.Tick.Marker = powerTicks(1, float64(maxNP))
		p.Y.Min, p.Y.Max = lo/1.3, hi*1.3
		p.Y.Tick.Marker = ratioTicks(p.Y.Min, p.Y.Max)
		plots[i/cols][i%cols] = p
	}
	for j := len(drawn); j < nrows*cols; j++ {
		plots[j/cols][j%cols] = plot.New()
		plots[j/cols][j%cols].HideAxes()
	}
	return drawAll(img, dc, tiles, plots, out)
}

// ratioTicks marks the powers of two between lo and hi, and a few
// fractions between them when the range is narrower than a factor of 4.
func ratioTicks(lo, hi float64) plot.ConstantTicks {
	var t plot.ConstantTicks
	step := 2.0
	if hi/lo < 4 {
		step = 1.25
	}
	for x := 1.0; x >= lo; x /= step {
		t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 3, 64)})
	}
	for x := step; x <= hi; x *= step {
		t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 3, 64)})
	}
	sort.Slice(t, func(a, b int) bool { return t[a].Value < t[b].Value })
	return t
}

// scalingReport writes bench/scaling.sh's Markdown report: per study a
// table with one row per workload and network, and per rank count the
// metric's seconds, the speedup or efficiency over the shm np 1 run, and
// the busiest rank's MiB sent.
func scalingReport(rows []map[string]string, out string) error {
	cases := scalingCases(rows)
	if len(cases) == 0 {
		return fmt.Errorf("no successful runs")
	}
	var nps []int
	for _, c := range cases {
		for _, pts := range c.runs {
			for _, pt := range pts {
				if !slices.Contains(nps, pt.np) {
					nps = append(nps, pt.np)
				}
			}
		}
	}
	slices.Sort(nps)
	var b strings.Builder
	fmt.Fprintf(&b, "# gnnmpi scaling study\n\nGenerated by `go run ./bench/plot scaling-report` from bench/scaling.sh's CSV")
	if commit := rows[0]["commit"]; commit != "" {
		fmt.Fprintf(&b, " (commit %s)", commit)
	}
	fmt.Fprintf(&b, ". Each cell: the workload's seconds (epoch, sampling or product; see bench/scaling.sh), "+
		"then the speedup (strong) or efficiency (weak) over the shared-memory np 1 run, then the busiest rank's MiB sent. "+
		"Chart: scaling.png.\n")
	for _, study := range []string{"strong", "weak"} {
		var sc []*scalingCase
		for _, c := range cases {
			if c.study == study {
				sc = append(sc, c)
			}
		}
		if len(sc) == 0 {
			continue
		}
		what := "speedup t₁/t_p (ideal p)"
		if study == "weak" {
			what = "efficiency t₁/t_p with the problem grown p-fold (ideal 1)"
		}
		fmt.Fprintf(&b, "\n## %s scaling: %s\n\n| workload | network |", study, what)
		for _, np := range nps {
			fmt.Fprintf(&b, " np %d |", np)
		}
		b.WriteString("\n|---|---|")
		for range nps {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		for _, c := range sc {
			for _, net := range c.nets {
				fmt.Fprintf(&b, "| %s | %s |", c.workload, net)
				for _, np := range nps {
					i := slices.IndexFunc(c.runs[net], func(pt scalingPoint) bool { return pt.np == np })
					if i < 0 {
						b.WriteString(" |")
						continue
					}
					pt := c.runs[net][i]
					cell := strconv.FormatFloat(pt.seconds, 'g', 3, 64) + " s"
					if c.base > 0 {
						cell += fmt.Sprintf(", %.2f×", c.ratio(pt))
					}
					if pt.np > 1 {
						cell += fmt.Sprintf(", %.1f MiB", pt.maxSent/(1<<20))
					}
					fmt.Fprintf(&b, " %s |", cell)
				}
				b.WriteString("\n")
			}
		}
	}
	if out == "-" {
		_, err := os.Stdout.WriteString(b.String())
		return err
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
