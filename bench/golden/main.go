// Command golden prints a metrics JSONL file with the keys that measure time
// or memory removed and every object's keys sorted, one record a line, for
// bench/golden.sh to compare the results of two builds key for key.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: golden FILE.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
		b, _ := json.Marshal(strip(v)) // maps marshal with sorted keys
		fmt.Println(string(b))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// measured reports whether key names a time or memory measurement
// (data_path: the loader's rates and the copy bandwidth).
func measured(key string) bool {
	return strings.HasSuffix(key, "_s") || strings.HasSuffix(key, "seconds") || key == "peak_rss_bytes" || key == "peak_anon_bytes" || key == "peak_live_heap_bytes" || key == "wall_s" || key == "data_path"
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if measured(k) {
				delete(x, k)
			} else {
				x[k] = strip(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = strip(e)
		}
	}
	return v
}
