package partition

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gnnmpi/internal/textfile"
)

// A book file is a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// followed by the part of each vertex, one decimal number per line in
// global-id order, optionally gzip-compressed.

// headerSyntax describes a valid header in error messages.
const headerSyntax = "gnnmpi-partition 1 nodes=N parts=K method=M"

// ParseError reports a malformed or unreadable book file: the file, the
// 1-based line and what is wrong (the type graph's readers return too).
type ParseError = textfile.ParseError

// Write writes b to path: a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// then the part of each vertex, one decimal number per line in global-id
// order. The file is gzip-compressed when path ends in ".gz". Write writes a
// temporary file in the same directory and renames it over path, so readers
// see either the old file or the complete new one.
func Write(path string, b *Book) error {
	if b.Parts < 1 || b.Parts > math.MaxInt32 {
		return fmt.Errorf("partition: writing %s: book with %d parts", path, b.Parts)
	}
	if err := checkMethod(b.Method); err != nil {
		return fmt.Errorf("partition: writing %s: %w", path, err)
	}
	for gid, r := range b.Part {
		if r < 0 || int(r) >= b.Parts {
			return fmt.Errorf("partition: writing %s: vertex %d in part %d outside [0,%d)", path, gid, r, b.Parts)
		}
	}
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("partition: writing %s: %w", path, err)
	}
	return nil
}

// writeFile writes b's text to path atomically, gzip-compressed when path
// ends in ".gz" (textfile.Write).
func writeFile(path string, b *Book) error {
	return textfile.Write(path, func(w *bufio.Writer) error {
		if _, err := fmt.Fprintf(w, "gnnmpi-partition 1 nodes=%d parts=%d method=%s\n", len(b.Part), b.Parts, b.Method); err != nil {
			return err
		}
		return textfile.WriteInts(w, b.Part)
	})
}

// Read reads a book written by Write, gunzipping it when path ends in ".gz".
// Malformed input is reported as a *ParseError at its line
// ("path:line: message"): a bad header, a part id that is not a number or
// lies outside [0, parts), or fewer or more part ids than the header's node
// count. A missing file is a *ParseError wrapping fs.ErrNotExist, a
// truncated gzip stream one wrapping textfile.ErrTruncated (graph.ErrTruncated).
func Read(path string) (*Book, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer lr.Close()

	h, err := lr.Next()
	if err == io.EOF {
		return nil, &ParseError{Path: path, Line: 1, Msg: "empty file, want header " + strconv.Quote(headerSyntax)}
	}
	if err != nil {
		return nil, err
	}
	nodes, parts, method, err := parseHeader(h)
	if err != nil {
		return nil, lr.Errorf("%v", err)
	}
	// Every id takes at least two bytes, so a larger count is a lie; check
	// before allocating for it.
	if nodes > textfile.MaxLines(path) {
		return nil, lr.Errorf("nodes=%d is more than the file can hold", nodes)
	}

	part := make([]int32, 0, nodes)
	for {
		b, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if int64(len(part)) == nodes {
			return nil, lr.Errorf("more than nodes=%d part ids", nodes)
		}
		r, ok := textfile.ParseInt(b)
		if !ok {
			return nil, lr.Errorf("bad part id %s", textfile.Quote(b))
		}
		if r < 0 || r >= int64(parts) {
			return nil, lr.Errorf("part id %d out of range [0,%d)", r, parts)
		}
		part = append(part, int32(r))
	}
	if int64(len(part)) != nodes {
		return nil, &ParseError{Path: path, Line: lr.Line() + 1, Msg: fmt.Sprintf("unexpected end of file after %d of nodes=%d part ids", len(part), nodes)}
	}
	return newBook(part, parts, method), nil
}

// parseHeader parses "gnnmpi-partition 1 nodes=N parts=K method=M".
func parseHeader(line []byte) (nodes int64, parts int, method string, err error) {
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0] != "gnnmpi-partition" {
		return 0, 0, "", fmt.Errorf("bad header %s, want %q", textfile.Quote(line), headerSyntax)
	}
	if f[1] != "1" {
		return 0, 0, "", fmt.Errorf("unsupported partition book version %q, want 1", f[1])
	}
	value := func(field, key string) (int64, string, error) {
		v, ok := strings.CutPrefix(field, key+"=")
		if !ok || v == "" {
			return 0, "", fmt.Errorf("bad header field %q, want %s=…", field, key)
		}
		x, ok := textfile.ParseInt([]byte(v))
		if key != "method" && !ok {
			return 0, "", fmt.Errorf("bad header field %q: not an integer", field)
		}
		return x, v, nil
	}
	nodes, _, err = value(f[2], "nodes")
	if err != nil {
		return 0, 0, "", err
	}
	if nodes < 0 {
		return 0, 0, "", fmt.Errorf("bad node count %d", nodes)
	}
	p, _, err := value(f[3], "parts")
	if err != nil {
		return 0, 0, "", err
	}
	if p < 1 || p > math.MaxInt32 {
		return 0, 0, "", fmt.Errorf("bad part count %d", p)
	}
	if _, method, err = value(f[4], "method"); err != nil {
		return 0, 0, "", err
	}
	return nodes, int(p), method, nil
}
