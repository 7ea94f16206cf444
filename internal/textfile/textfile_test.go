package textfile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeGzip(t *testing.T, path string, data []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// readAll returns every line of path and the error that ended the reading
// (nil at the end of the input). It reads the file twice, by Next and by
// All, and checks that both give the same lines and error.
func readAll(t *testing.T, path string) ([]string, error) {
	t.Helper()
	lr, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	var lines []string
	for {
		b, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			iterLines, iterErr := readAllIter(t, path)
			assert.Equal(t, lines, iterLines)
			assert.Equal(t, err, iterErr)
			return lines, err
		}
		lines = append(lines, string(b))
		assert.Equal(t, len(lines), lr.Line())
	}
	iterLines, iterErr := readAllIter(t, path)
	assert.Equal(t, lines, iterLines)
	assert.NoError(t, iterErr)
	return lines, nil
}

// readAllIter reads path with All and Err.
func readAllIter(t *testing.T, path string) ([]string, error) {
	t.Helper()
	lr, err := Open(path)
	require.NoError(t, err)
	defer lr.Close()
	var lines []string
	for b := range lr.All() {
		lines = append(lines, string(b))
	}
	return lines, lr.Err()
}

// Lines strips "\n" and "\r\n", keeps the last line without a newline,
// reads lines longer than its buffer whole, and decompresses ".gz" files
// small and large (the read-ahead path) alike.
func TestLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 3*BufSize/2)
	text := "a b\r\n\n" + long + "\nlast"
	want := []string{"a b", "", long, "last"}
	plain := filepath.Join(dir, "t.txt")
	require.NoError(t, os.WriteFile(plain, []byte(text), 0o644))
	got, err := readAll(t, plain)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	gz := filepath.Join(dir, "t.txt.gz")
	writeGzip(t, gz, []byte(text))
	got, err = readAll(t, gz)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Large enough for read-ahead once compressed (random-looking lines).
	var big strings.Builder
	var wantBig []string
	x := uint64(1)
	for big.Len() < 4*smallFile {
		x = x*6364136223846793005 + 1442695040888963407
		line := strings.Repeat(string(rune('a'+x>>60)), int(x>>50)%97)
		big.WriteString(line + "\n")
		wantBig = append(wantBig, line)
	}
	bigGz := filepath.Join(dir, "big.txt.gz")
	writeGzip(t, bigGz, []byte(big.String()))
	got, err = readAll(t, bigGz)
	require.NoError(t, err)
	assert.Equal(t, wantBig, got)
}

// Input errors are *ParseErrors naming the file and, where there is one,
// the line: a missing file, a bad gzip header, a truncated gzip stream.
func TestLinesErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "none.txt"))
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "none.txt: missing file")

	bad := filepath.Join(dir, "bad.gz")
	require.NoError(t, os.WriteFile(bad, []byte("not gzip at all"), 0o644))
	_, err = Open(bad)
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "bad gzip header")

	empty := filepath.Join(dir, "empty.gz")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = Open(empty)
	assert.ErrorIs(t, err, ErrTruncated)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write([]byte(strings.Repeat("1 2\n", 1000)))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	cut := filepath.Join(dir, "cut.gz")
	require.NoError(t, os.WriteFile(cut, buf.Bytes()[:buf.Len()/2], 0o644))
	lines, err := readAll(t, cut)
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, ErrTruncated)
	assert.Equal(t, len(lines)+1, pe.Line, "the error names the line being read")
}

func TestErrorf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.txt")
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\n"), 0o644))
	lr, err := Open(path)
	require.NoError(t, err)
	defer lr.Close()
	_, err = lr.Next()
	require.NoError(t, err)
	_, err = lr.Next()
	require.NoError(t, err)
	assert.EqualError(t, lr.Errorf("bad %s", "thing"), path+":2: bad thing")
	assert.Equal(t, path, lr.Path())
}

func TestParseErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  *ParseError
		want string
	}{
		{&ParseError{Path: "x/edge.csv.gz", Line: 17, Msg: "vertex id 9 out of range"}, "x/edge.csv.gz:17: vertex id 9 out of range"},
		{&ParseError{Path: "a.bin", Msg: "section features", Err: ErrTruncated}, "a.bin: section features: file truncated"},
		{&ParseError{Path: "a.bin", Err: ErrTruncated}, "a.bin: file truncated"},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
	}
}

// MaxLines bounds the lines a file can hold by its size: two bytes a line,
// times the deflate bound for ".gz".
func TestMaxLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("1\n2\n3\n"), 0o644))
	assert.Equal(t, int64(4), MaxLines(p))
	gz := filepath.Join(dir, "f.txt.gz")
	require.NoError(t, os.WriteFile(gz, []byte("0123456789"), 0o644))
	assert.Equal(t, int64(10*MaxDeflateRatio/2+1), MaxLines(gz))
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true}, {"+7", 7, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false}, {"", 0, false}, {"-", 0, false},
		{"1.0", 0, false}, {" 1", 0, false}, {"1e3", 0, false},
	} {
		got, ok := ParseInt([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "ParseInt(%q)", tc.in)
		if ok {
			assert.Equal(t, tc.want, got, "ParseInt(%q)", tc.in)
		}
	}
}

func TestParseFloats(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float32
		ok   bool
	}{
		{"3", 3, true}, {"-0", float32(negZero()), true}, {"16777217", 16777216, true}, {"0.1", 0.1, true},
		{"1e-3", 1e-3, true}, {"inf", 0, false}, {"NaN", 0, false}, {"1e40", 0, false}, {"", 0, false}, {"x", 0, false},
	} {
		got, ok := ParseFloat32([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "ParseFloat32(%q)", tc.in)
		if ok {
			assert.Equal(t, tc.want, got, "ParseFloat32(%q)", tc.in)
		}
	}
	v, ok := ParseFloat64([]byte("9007199254740993"))
	assert.True(t, ok)
	assert.Equal(t, 9007199254740992.0, v, "beyond 2^53 rounds as strconv does")
	v, ok = ParseFloat64([]byte("0.1"))
	assert.True(t, ok)
	assert.Equal(t, 0.1, v)
	_, ok = ParseFloat64([]byte("1e400"))
	assert.False(t, ok)
}

func negZero() float64 { z := 0.0; return -z }

func TestFieldsQuote(t *testing.T) {
	var dst [2][]byte
	n := Fields([]byte(" \ta  bb\tccc \r"), dst[:])
	assert.Equal(t, 3, n, "counts every field")
	assert.Equal(t, "a", string(dst[0]))
	assert.Equal(t, "bb", string(dst[1]))
	assert.Equal(t, 0, Fields([]byte("  \t "), dst[:]))
	assert.Equal(t, `"ab"`, Quote([]byte("ab")))
	assert.Equal(t, strings.Repeat("x", 48), strings.Trim(strings.TrimSuffix(Quote(bytes.Repeat([]byte("x"), 100)), "…"), `"`))
}

// Write replaces a file atomically, compressed for ".gz" (read back by
// Open), and leaves the old file in place when fill fails.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"w.txt", "w.txt.gz"} {
		path := filepath.Join(dir, name)
		require.NoError(t, Write(path, func(w *bufio.Writer) error { return WriteInts(w, []int32{3, -1, 7}) }))
		got, err := readAll(t, path)
		require.NoError(t, err)
		assert.Equal(t, []string{"3", "-1", "7"}, got)

		boom := errors.New("boom")
		require.ErrorIs(t, Write(path, func(w *bufio.Writer) error {
			w.WriteString("partial\n")
			return boom
		}), boom)
		got, err = readAll(t, path)
		require.NoError(t, err)
		assert.Equal(t, []string{"3", "-1", "7"}, got, "a failed write leaves the old file")
		left, err := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
		require.NoError(t, err)
		assert.Empty(t, left, "no temporary file is left behind")
	}
}
