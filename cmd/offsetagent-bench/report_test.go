package main

import (
	"math"
	"testing"
	"time"
)

func TestMedianRange(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct {
		name           string
		in             []float64
		median, lo, hi float64
		wantNaN        bool
	}{
		{name: "odd", in: []float64{3, 1, 2}, median: 2, lo: 1, hi: 3},
		{name: "even", in: []float64{4, 1, 2, 3}, median: 2.5, lo: 1, hi: 4},
		{name: "NaN left out", in: []float64{nan, 5, 1}, median: 3, lo: 1, hi: 5},
		{name: "none", in: []float64{nan}, wantNaN: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, lo, hi := medianRange(tt.in)
			if tt.wantNaN {
				if !math.IsNaN(m) || !math.IsNaN(lo) || !math.IsNaN(hi) {
					t.Fatalf("got %v %v %v, want NaN", m, lo, hi)
				}
				return
			}
			if m != tt.median || lo != tt.lo || hi != tt.hi {
				t.Fatalf("got %v %v %v, want %v %v %v", m, lo, hi, tt.median, tt.lo, tt.hi)
			}
		})
	}
}

// The target of a rate row holds for the median wall ratio and the median CPU ratio alike.
func TestRateRowTarget(t *testing.T) {
	s := func(wall, cpu time.Duration) bulkSample { return bulkSample{wall: wall, cpu: cpu} }
	base := []bulkSample{s(100, 100), s(100, 100), s(100, 100)}
	for _, tt := range []struct {
		name    string
		samples []bulkSample
		pass    bool
	}{
		{name: "both met", samples: []bulkSample{s(110, 120), s(120, 110), s(500, 500)}, pass: true},
		{name: "CPU missed", samples: []bulkSample{s(110, 200), s(120, 200), s(100, 100)}, pass: false},
		{name: "wall missed", samples: []bulkSample{s(200, 100), s(200, 100), s(100, 100)}, pass: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rateRow("1 bulk", "x", 1000, tt.samples, base, ">=", 0.8)
			if r.pass == nil || *r.pass != tt.pass {
				t.Fatalf("pass = %v, want %v (ratio %.2f, CPU %.2f)", r.pass, tt.pass, r.ratio, r.cpu)
			}
		})
	}
}
