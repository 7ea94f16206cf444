package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestArchitectureTree checks docs/architecture.md's package map (the
// first fenced block: "dir/  description", children indented by two):
// every package of the layer table is in it, and no directory holding Go
// files is described as empty or planned (the map once said "nccl/ …
// empty today" long after nccl/ was written).
func TestArchitectureTree(t *testing.T) {
	b, err := os.ReadFile("docs/architecture.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "```\n")
	require.True(t, ok, "no fenced block")
	block, _, _ := strings.Cut(rest, "```")
	entry := regexp.MustCompile(`^( *)([a-z0-9_]+(?:/[a-z0-9_]+)*/) +(.*)$`)
	var parents []string // by depth
	var stale []string
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		m := entry.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		depth := len(m[1]) / 2
		if depth > len(parents) {
			continue // a continuation line that happens to start with a word and a slash
		}
		parents = append(parents[:depth], strings.TrimSuffix(m[2], "/"))
		dir := filepath.Join(parents...)
		listed[dir] = true
		desc := strings.ToLower(m[3])
		if strings.Contains(desc, "empty") || strings.Contains(desc, "planned") {
			if gos, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(gos) > 0 {
				stale = append(stale, dir+": "+m[3])
			}
		}
	}
	require.Empty(t, stale, "architecture.md calls directories with Go files empty or planned")
	var missing []string
	for p := range layers {
		dir := strings.TrimPrefix(p, "gnnmpi/")
		if p != "gnnmpi" && !listed[dir] && !strings.Contains(block, dir) { // bench/plot is named in bench/'s line
			missing = append(missing, dir)
		}
	}
	require.Empty(t, missing, "packages missing from architecture.md's package map")
}
