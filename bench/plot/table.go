package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// pipeTable writes the README's Markdown table of bench/pipe.sh's rows to
// out ("-" for standard output): one row per successful run, ordered by
// dataset (in the order of first appearance), model, rank count, epochs
// (most first) and mode (graph, pipe, hybrid), with each run's total
// bytes against the graph-parallel run of the same configuration.
func pipeTable(rows []map[string]string, out string) error {
	var ok []map[string]string
	for _, r := range rows {
		if r["error"] == "" && num(r, "epochs") > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return fmt.Errorf("no successful runs")
	}
	rank := func(key string) map[string]int {
		m := map[string]int{}
		for i, v := range groups(ok, key) {
			m[v] = i
		}
		return m
	}
	dsRank, modelRank := rank("dataset"), rank("model")
	modeRank := map[string]int{"graph": 0, "pipe": 1, "hybrid": 2}
	sort.SliceStable(ok, func(a, b int) bool {
		x, y := ok[a], ok[b]
		switch {
		case dsRank[x["dataset"]] != dsRank[y["dataset"]]:
			return dsRank[x["dataset"]] < dsRank[y["dataset"]]
		case modelRank[x["model"]] != modelRank[y["model"]]:
			return modelRank[x["model"]] < modelRank[y["model"]]
		case num(x, "np") != num(y, "np"):
			return num(x, "np") < num(y, "np")
		case num(x, "epochs") != num(y, "epochs"):
			return num(x, "epochs") > num(y, "epochs")
		}
		return modeRank[x["mode"]] < modeRank[y["mode"]]
	})
	config := func(r map[string]string) string {
		return strings.Join([]string{r["dataset"], r["model"], r["np"], r["epochs"], r["layers"], r["hidden"]}, "/")
	}
	graphTotal := map[string]float64{}
	for _, r := range ok {
		if r["mode"] == "graph" {
			graphTotal[config(r)] = num(r, "total")
		}
	}
	names := map[string]string{"physics": "coauthor-physics", "computers": "amazon-computers"}
	mb := func(v float64) string {
		switch {
		case v == 0:
			return "0"
		case v < 1e5:
			return fmt.Sprintf("%.1f kB", v/1e3)
		case v >= 1e9:
			return fmt.Sprintf("%.2f GB", v/1e9)
		}
		return fmt.Sprintf("%.1f MB", v/1e6)
	}

	var b strings.Builder
	b.WriteString("| dataset | model (layers × hidden) | np | mode | act + act-grad | halo (rows) | grad | total measured | total analytical | graph ÷ mode | epochs | median epoch (s) | test acc (%) | peak RSS per rank |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range ok {
		ds := r["dataset"]
		if n, found := names[ds]; found {
			ds = n
		}
		var mode string
		switch r["mode"] {
		case "graph":
			mode = fmt.Sprintf("graph (%s parts)", r["np"])
		case "pipe":
			mode = fmt.Sprintf("pipe (%s stages, %s chunks)", r["stages"], r["chunks"])
		default:
			mode = fmt.Sprintf("hybrid (%s pipelines × %s stages, %s chunks)", r["pipelines"], r["stages"], r["chunks"])
		}
		halo := mb(num(r, "halo"))
		if num(r, "halo") > 0 {
			halo += fmt.Sprintf(" (%s)", thousands(int64(num(r, "halo_rows"))))
		}
		analytical := 0.0
		for _, c := range []string{"act_model", "act_grad_model", "halo_model", "grad_model"} {
			analytical += num(r, c)
		}
		ratio := "–"
		if r["mode"] == "graph" {
			ratio = "1"
		} else if g, found := graphTotal[config(r)]; found && num(r, "total") > 0 {
			ratio = fmt.Sprintf("%.2f×", g/num(r, "total"))
		}
		fmt.Fprintf(&b, "| %s | %s (%s × %s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.1f GiB |\n",
			ds, r["model"], r["layers"], r["hidden"], r["np"], mode,
			mb(num(r, "act")+num(r, "act_grad")), halo, mb(num(r, "grad")),
			mb(num(r, "total")), mb(analytical), ratio, r["epochs"],
			num(r, "median_epoch_s"), 100*num(r, "test_acc"), num(r, "rss_mb_max")/1024)
	}
	var w io.Writer = os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// thousands formats v with comma separators: 22017 → "22,017".
func thousands(v int64) string {
	s := fmt.Sprint(v)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
