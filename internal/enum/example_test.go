package enum_test

import (
	"flag"
	"fmt"

	"gnnmpi/internal/enum"
)

// Shape names a shape; it implements flag.Value.
type Shape string

// Shapes.
const (
	Circle Shape = "circle"
	Square Shape = "square"
)

// ParseShape returns the shape named s.
func ParseShape(s string) (Shape, error) { return enum.Parse("draw", "shape", s, Circle, Square) }

// String returns the shape's name.
func (s Shape) String() string { return string(s) }

// Set sets s to the shape named v (flag.Value).
func (s *Shape) Set(v string) error { return enum.Set(s, ParseShape, v) }

func Example() {
	fs := flag.NewFlagSet("draw", flag.ContinueOnError)
	shape := Circle
	fs.Var(&shape, "shape", "circle or square")
	fmt.Println(fs.Parse([]string{"--shape", "square"}), shape)
	_, err := ParseShape("triangle")
	fmt.Println(err)
	// Output:
	// <nil> square
	// draw: unknown shape "triangle" (want circle or square)
}
