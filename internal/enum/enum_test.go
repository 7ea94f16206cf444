package enum

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

type color string

const (
	red   color = "red"
	green color = "green"
	blue  color = "blue"
)

var colors = []color{red, green, blue}

func parseColor(s string) (color, error) { return Parse("paint", "color", s, colors...) }

// Parse accepts exactly the listed names and lists them, in order, in its
// error.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       string
		want    color
		wantErr string
	}{
		{name: "first", s: "red", want: red},
		{name: "last", s: "blue", want: blue},
		{name: "unknown", s: "mauve", wantErr: `paint: unknown color "mauve" (want red, green or blue)`},
		{name: "case matters", s: "Red", wantErr: `paint: unknown color "Red" (want red, green or blue)`},
		{name: "empty", s: "", wantErr: `paint: unknown color "" (want red, green or blue)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseColor(tc.s)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				require.Equal(t, color(""), got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// Set stores what parses and leaves the value alone on an error, which it
// passes on unchanged.
func TestSet(t *testing.T) {
	c := red
	require.NoError(t, Set(&c, parseColor, "green"))
	require.Equal(t, green, c)
	require.EqualError(t, Set(&c, parseColor, "mauve"), `paint: unknown color "mauve" (want red, green or blue)`)
	require.Equal(t, green, c)

	sentinel := errors.New("no")
	n := 7
	require.ErrorIs(t, Set(&n, func(string) (int, error) { return 0, sentinel }, "x"), sentinel)
	require.Equal(t, 7, n)
}

// Or joins with commas and a final "or".
func TestOr(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a or b"},
		{[]string{"a", "b", "c", "d"}, "a, b, c or d"},
	} {
		require.Equal(t, tc.want, Or(tc.names), "got: %q want: %q", Or(tc.names), tc.want)
	}
}
