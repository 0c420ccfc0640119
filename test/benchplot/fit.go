package benchplot

import (
	"errors"
	"math"
)

// Fit is a least-squares fit y ≈ A + B·f(x) of some f, with its
// coefficient of determination R².
type Fit struct {
	A, B, R2 float64
}

// Linear fits y ≈ A + B·x.
func Linear(x, y []float64) (Fit, error) { return fitOf(x, y, func(v float64) float64 { return v }) }

// NLogN fits y ≈ A + B·x·ln x.
func NLogN(x, y []float64) (Fit, error) {
	return fitOf(x, y, func(v float64) float64 { return v * math.Log(v) })
}

// Quadratic fits y ≈ A + B·x².
func Quadratic(x, y []float64) (Fit, error) {
	return fitOf(x, y, func(v float64) float64 { return v * v })
}

// Exponent fits y ≈ c·x^k on log-log axes and returns k: 1 is linear
// growth, 0 none, 2 quadratic. Every x and y must be positive.
func Exponent(x, y []float64) (k, r2 float64, err error) {
	lx, ly := make([]float64, len(x)), make([]float64, len(y))
	for i := range x {
		if i >= len(y) || x[i] <= 0 || y[i] <= 0 {
			return 0, 0, errors.New("a log-log fit needs positive x and y")
		}
		lx[i], ly[i] = math.Log(x[i]), math.Log(y[i])
	}
	f, err := Linear(lx, ly)
	return f.B, f.R2, err
}

func fitOf(x, y []float64, f func(float64) float64) (Fit, error) {
	if len(x) != len(y) {
		return Fit{}, errors.New("x and y differ in length")
	}
	if len(x) < 2 {
		return Fit{}, errors.New("a fit needs two points or more")
	}
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		u := f(x[i])
		sx, sy, sxx, sxy = sx+u, sy+y[i], sxx+u*u, sxy+u*y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return Fit{}, errors.New("all x are equal")
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	mean := sy / n
	var ssRes, ssTot float64
	for i := range x {
		r := y[i] - (a + b*f(x[i]))
		ssRes += r * r
		ssTot += (y[i] - mean) * (y[i] - mean)
	}
	r2 := 1.0
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	}
	return Fit{A: a, B: b, R2: r2}, nil
}
