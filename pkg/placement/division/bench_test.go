package division

import (
	"fmt"
	"math"
	"testing"
)

// BenchmarkDivide measures one division at the sizes a tenant can ask
// for: the cost must follow the number of cells, not the replicas.
func BenchmarkDivide(b *testing.B) {
	cases := []struct {
		name     string
		replicas int32
		cells    []Cell
	}{
		{"replicas=10/cells=3", 10, weighted(1, 2, 2)},
		{"replicas=100000/cells=10", 100000, weighted(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
		{"replicas=MaxInt32/weights=MaxInt32,1", math.MaxInt32, weighted(math.MaxInt32, 1)},
		{"replicas=MaxInt32/cells=1000", math.MaxInt32, manyCells(1000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := Input{Key: "shop/web", Mode: ModeDivide, Replicas: c.replicas, Cells: c.cells}
			for b.Loop() {
				if _, err := Divide(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// manyCells is n cells c0000… of weights 1…7, repeating.
func manyCells(n int) []Cell {
	cells := make([]Cell, n)
	for i := range cells {
		cells[i] = Cell{Name: fmt.Sprintf("c%04d", i), Weight: int32(i%7 + 1)}
	}
	return cells
}
