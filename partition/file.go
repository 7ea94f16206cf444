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
// global-id order, optionally gzip-compressed. A book made by Contiguous is
// written as version 2,
//
//	gnnmpi-partition 2 nodes=N parts=K method=M
//
// followed by its K+1 offsets, one per line (the first 0, the last N).

// headerSyntax describes a valid header in error messages.
const headerSyntax = "gnnmpi-partition V nodes=N parts=K method=M (V = 1 or 2)"

// ParseError reports a malformed or unreadable book file: the file, the
// 1-based line and what is wrong (the type graph's readers return too).
type ParseError = textfile.ParseError

// Write writes b to path: a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// then the part of each vertex, one decimal number per line in global-id
// order; or, for a book made by Contiguous, the header of version 2
// ("gnnmpi-partition 2 …") then its K+1 offsets, one per line. The file is gzip-compressed when path ends in ".gz". Write writes a
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
		version := 1
		if b.compact() {
			version = 2
		}
		if _, err := fmt.Fprintf(w, "gnnmpi-partition %d nodes=%d parts=%d method=%s\n", version, b.NumNodes(), b.Parts, b.Method); err != nil {
			return err
		}
		if b.compact() {
			return textfile.WriteInts(w, b.offsets)
		}
		return textfile.WriteInts(w, b.Part)
	})
}

// Read reads a book written by Write, gunzipping it when path ends in ".gz";
// a version-2 file gives a book made by Contiguous.
// Malformed input is reported as a *ParseError at its line
// ("path:line: message"): a bad header, a part id that is not a number or
// lies outside [0, parts), or fewer or more part ids than the header's node
// count; in version 2, an offset that is not a number, is not 0 first,
// decreases, or a count of offsets other than parts+1 or a last one other
// than nodes. A missing file is a *ParseError wrapping fs.ErrNotExist, a
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
	version, nodes, parts, method, err := parseHeader(h)
	if err != nil {
		return nil, lr.Errorf("%v", err)
	}
	if version == 2 {
		return readOffsets(lr, path, nodes, parts, method)
	}
	// Every id takes at least two bytes, so a larger count is a lie; check
	// before allocating for it.
	if nodes > textfile.MaxLines(path) {
		return nil, lr.Errorf("nodes=%d is more than the file can hold", nodes)
	}

	part := make([]int32, 0, nodes)
	for b := range lr.All() {
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
	if err := lr.Err(); err != nil {
		return nil, err
	}
	if int64(len(part)) != nodes {
		return nil, &ParseError{Path: path, Line: lr.Line() + 1, Msg: fmt.Sprintf("unexpected end of file after %d of nodes=%d part ids", len(part), nodes)}
	}
	return newBook(part, parts, method), nil
}

// readOffsets reads the body of a version-2 file, the K+1 offsets of a
// contiguous book, after its header.
func readOffsets(lr *textfile.Lines, path string, nodes int64, parts int, method string) (*Book, error) {
	if int64(parts)+1 > textfile.MaxLines(path) {
		return nil, lr.Errorf("parts=%d is more than the file can hold", parts)
	}
	offsets := make([]int64, 0, parts+1)
	for b := range lr.All() {
		if len(offsets) == parts+1 {
			return nil, lr.Errorf("more than parts+1 = %d offsets", parts+1)
		}
		x, ok := textfile.ParseInt(b)
		switch {
		case !ok:
			return nil, lr.Errorf("bad offset %s", textfile.Quote(b))
		case len(offsets) == 0 && x != 0:
			return nil, lr.Errorf("first offset %d, want 0", x)
		case len(offsets) > 0 && x < offsets[len(offsets)-1]:
			return nil, lr.Errorf("offset %d below the previous one, %d", x, offsets[len(offsets)-1])
		case x > nodes:
			return nil, lr.Errorf("offset %d beyond nodes=%d", x, nodes)
		}
		offsets = append(offsets, x)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	if len(offsets) != parts+1 {
		return nil, &ParseError{Path: path, Line: lr.Line() + 1, Msg: fmt.Sprintf("unexpected end of file after %d of parts+1 = %d offsets", len(offsets), parts+1)}
	}
	if offsets[parts] != nodes {
		return nil, &ParseError{Path: path, Line: lr.Line(), Msg: fmt.Sprintf("last offset %d, want nodes=%d", offsets[parts], nodes)}
	}
	return Contiguous(offsets, method)
}

// parseHeader parses "gnnmpi-partition V nodes=N parts=K method=M".
func parseHeader(line []byte) (version int, nodes int64, parts int, method string, err error) {
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0] != "gnnmpi-partition" {
		return 0, 0, 0, "", fmt.Errorf("bad header %s, want %q", textfile.Quote(line), headerSyntax)
	}
	switch f[1] {
	case "1":
		version = 1
	case "2":
		version = 2
	default:
		return 0, 0, 0, "", fmt.Errorf("unsupported partition book version %q, want 1 or 2", f[1])
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
		return 0, 0, 0, "", err
	}
	if nodes < 0 {
		return 0, 0, 0, "", fmt.Errorf("bad node count %d", nodes)
	}
	p, _, err := value(f[3], "parts")
	if err != nil {
		return 0, 0, 0, "", err
	}
	if p < 1 || p > math.MaxInt32 {
		return 0, 0, 0, "", fmt.Errorf("bad part count %d", p)
	}
	if _, method, err = value(f[4], "method"); err != nil {
		return 0, 0, 0, "", err
	}
	return version, nodes, int(p), method, nil
}
