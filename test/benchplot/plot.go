// Package benchplot draws the benchmarks' line charts as PNG: panels side
// by side, each with a linear or logarithmic x axis, a linear y axis from
// zero, one line with markers per series and a legend. Text is Go's
// basicfont (7×13 pixels).
package benchplot

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line: points (X[i], Y[i]); NaN Ys are gaps.
type Series struct {
	Name string
	X, Y []float64
}

// Panel is one chart.
type Panel struct {
	// Title names the quantity and its unit, e.g. "latency (ms)".
	Title  string
	XLabel string
	// LogX spaces x logarithmically (every X must be positive).
	LogX   bool
	Series []Series
}

// Panel geometry, in pixels.
const (
	panelW, panelH                     = 420, 320
	marginL, marginR, marginT, marginB = 58, 14, 26, 40
)

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
}

// Render writes the panels side by side as one PNG.
func Render(w io.Writer, panels ...Panel) error {
	if len(panels) == 0 {
		return errors.New("no panel to draw")
	}
	img := image.NewRGBA(image.Rect(0, 0, panelW*len(panels), panelH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for i, p := range panels {
		if err := drawPanel(img, image.Pt(i*panelW, 0), p); err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
	}
	return png.Encode(w, img)
}

func drawPanel(img *image.RGBA, at image.Point, p Panel) error {
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range p.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i, x := range s.X {
			if p.LogX && x <= 0 {
				return fmt.Errorf("series %q: x %v on a log axis", s.Name, x)
			}
			if math.IsNaN(s.Y[i]) {
				continue
			}
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, s.Y[i])
		}
	}
	if math.IsInf(xmin, 1) {
		return errors.New("no point to draw")
	}
	if xmax == xmin {
		xmin, xmax = xmin*0.5, xmax*1.5+1
	}
	ystep := niceStep(ymax / 5)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	area := image.Rect(at.X+marginL, at.Y+marginT, at.X+panelW-marginR, at.Y+panelH-marginB)
	fx := func(x float64) int {
		f := (x - xmin) / (xmax - xmin)
		if p.LogX {
			f = (math.Log(x) - math.Log(xmin)) / (math.Log(xmax) - math.Log(xmin))
		}
		return area.Min.X + int(math.Round(f*float64(area.Dx())))
	}
	fy := func(y float64) int { return area.Max.Y - int(math.Round(y/ytop*float64(area.Dy()))) }

	grey, light, black := color.RGBA{0x80, 0x80, 0x80, 0xff}, color.RGBA{0xe8, 0xe8, 0xe8, 0xff}, color.RGBA{0, 0, 0, 0xff}
	for y := 0.0; y <= ytop*1.0001; y += ystep {
		line(img, area.Min.X, fy(y), area.Max.X, fy(y), light, 1)
		lbl := format(y)
		text(img, area.Min.X-6-7*len(lbl), fy(y)+4, lbl, black)
	}
	for _, x := range xTicks(xmin, xmax, p.LogX) {
		line(img, fx(x), area.Max.Y, fx(x), area.Max.Y+4, grey, 1)
		lbl := format(x)
		text(img, fx(x)-7*len(lbl)/2, area.Max.Y+17, lbl, black)
	}
	line(img, area.Min.X, area.Min.Y, area.Min.X, area.Max.Y, grey, 1)
	line(img, area.Min.X, area.Max.Y, area.Max.X, area.Max.Y, grey, 1)
	text(img, at.X+marginL, at.Y+17, p.Title, black)
	text(img, area.Min.X+area.Dx()/2-7*len(p.XLabel)/2, area.Max.Y+34, p.XLabel, black)

	for i, s := range p.Series {
		c := palette[i%len(palette)]
		prev, have := image.Point{}, false
		for j := range s.X {
			if math.IsNaN(s.Y[j]) {
				have = false
				continue
			}
			pt := image.Pt(fx(s.X[j]), fy(s.Y[j]))
			if have {
				line(img, prev.X, prev.Y, pt.X, pt.Y, c, 2)
			}
			draw.Draw(img, image.Rect(pt.X-3, pt.Y-3, pt.X+4, pt.Y+4), image.NewUniform(c), image.Point{}, draw.Src)
			prev, have = pt, true
		}
		// The legend, top left inside the area.
		ly := area.Min.Y + 14 + 15*i
		draw.Draw(img, image.Rect(area.Min.X+8, ly-7, area.Min.X+22, ly-3), image.NewUniform(c), image.Point{}, draw.Src)
		text(img, area.Min.X+27, ly, s.Name, black)
	}
	return nil
}

// niceStep is the least of 1, 2 or 5 times a power of ten ≥ raw.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// xTicks are about five ticks in [min, max]: 1-2-5 steps on a log axis.
func xTicks(min, max float64, log bool) []float64 {
	var out []float64
	if !log {
		step := niceStep((max - min) / 5)
		for x := math.Ceil(min/step) * step; x <= max*1.0001; x += step {
			out = append(out, x)
		}
		return out
	}
	for p := math.Pow(10, math.Floor(math.Log10(min))); p <= max*1.0001; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if x := m * p; x >= min*0.9999 && x <= max*1.0001 {
				out = append(out, x)
			}
		}
	}
	return out
}

// format writes a tick value briefly: 1500 → 1.5k, 100000 → 100k.
func format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case a == 0 || a >= 1:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// line draws from (x0, y0) to (x1, y1), w pixels wide (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, w int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		for i := range w {
			for j := range w {
				img.SetRGBA(x0+i, y0+j, c)
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
