package benchplot

import (
	"bytes"
	"image/png"
	"math"
	"testing"
)

func TestRender(t *testing.T) {
	var buf bytes.Buffer
	err := Render(&buf,
		Panel{Title: "latency (ms)", XLabel: "cells", LogX: true, Series: []Series{
			{Name: "p50", X: []float64{10, 100, 1000}, Y: []float64{20, 40, math.NaN()}},
			{Name: "p99", X: []float64{10, 100, 1000}, Y: []float64{50, 90, 400}},
		}},
		Panel{Title: "RSS (MiB)", XLabel: "placements", Series: []Series{{Name: "rss", X: []float64{1000, 50000}, Y: []float64{80, 300}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != panelH {
		t.Errorf("size %v, want %dx%d", b, 2*panelW, panelH)
	}
	// The first series' colour is drawn somewhere (its line and markers).
	found := false
	for y := 0; y < panelH && !found; y++ {
		for x := 0; x < panelW; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0x1f && g>>8 == 0x77 && b>>8 == 0xb4 {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("the first series is not drawn")
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name string
		p    []Panel
	}{
		{"no panel", nil},
		{"no point", []Panel{{Title: "x"}}},
		{"x ≤ 0 on a log axis", []Panel{{LogX: true, Series: []Series{{X: []float64{0, 1}, Y: []float64{1, 2}}}}}},
		{"lengths differ", []Panel{{Series: []Series{{X: []float64{1, 2}, Y: []float64{1}}}}}},
	}
	for _, tt := range tests {
		if err := Render(&bytes.Buffer{}, tt.p...); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestTicks(t *testing.T) {
	if got := xTicks(10, 1000, true); len(got) != 7 || got[0] != 10 || got[6] != 1000 {
		t.Errorf("log ticks 10…1000: %v", got)
	}
	if got := niceStep(130); got != 200 {
		t.Errorf("niceStep(130) = %v, want 200", got)
	}
	for v, want := range map[float64]string{0: "0", 1500: "1.5k", 100000: "100k", 0.25: "0.25", 2e6: "2M"} {
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFits(t *testing.T) {
	x := []float64{10, 50, 100, 500, 1000}
	lin := make([]float64, len(x))
	quad := make([]float64, len(x))
	for i, v := range x {
		lin[i], quad[i] = 3+2*v, 5*v*v
	}
	f, err := Linear(x, lin)
	if err != nil || math.Abs(f.A-3) > 1e-9 || math.Abs(f.B-2) > 1e-9 || math.Abs(f.R2-1) > 1e-9 {
		t.Errorf("Linear = %+v, %v; want A 3, B 2, R² 1", f, err)
	}
	if k, _, err := Exponent(x, quad); err != nil || math.Abs(k-2) > 1e-9 {
		t.Errorf("Exponent of 5x² = %v, %v; want 2", k, err)
	}
	if q, _ := Quadratic(x, quad); math.Abs(q.R2-1) > 1e-9 {
		t.Errorf("Quadratic R² of 5x² = %v", q.R2)
	}
	if n, _ := NLogN(x, lin); n.R2 >= 1 {
		t.Errorf("NLogN fits a line perfectly: %+v", n)
	}
	if _, err := Linear([]float64{1}, []float64{1}); err == nil {
		t.Error("a fit of one point: no error")
	}
	if _, _, err := Exponent([]float64{1, 2}, []float64{0, 1}); err == nil {
		t.Error("log-log fit of y = 0: no error")
	}
}
