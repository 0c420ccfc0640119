package division

import (
	"container/heap"
	"math"
	"math/bits"
	"sort"
)

// The one-at-a-time hand-out of the package comment, computed without
// handing out one replica at a time: O(cells log cells) whatever the
// replicas.
//
// Each seat holds a sequence of bids, one per replica it could take:
// bid k (its (k+1)-th replica) ranks by (k < min, weight/(2k+1), tie-break).
// A seat's bids fall in rank as k grows, so handing out one replica at a
// time to the best next bid gives each seat exactly its bids among the
// best `left` bids of all seats. Bids below the minimum all rank above
// the others, so those are chosen first (tier 1: k < min), then the rest
// (tier 2). Within a tier, the best r bids of positive weight are found
// by a threshold: the bids worth at least 1/x are, per seat, the k with
// 2k+1 <= weight·x. A float x found by bisection gives every seat a count
// at most one off the exact one, so one less than it is safely among the
// best r; at most 3 bids per seat are then handed out one at a time from
// a heap, in the exact order.

// handOut gives the seats left replicas by the rule (setting each seat's
// n) and returns how many it handed out: fewer than left when every seat
// is at its cap.
func handOut(seats []*seat, left int64) int64 {
	tier1 := make([]bidRange, len(seats))
	tier2 := make([]bidRange, len(seats))
	var sumMin int64
	for k, s := range seats {
		s.n = 0
		ceil := left // no seat takes more than there is
		if s.max >= 0 {
			ceil = min(ceil, s.max)
		}
		effMin := min(s.min, ceil)
		sumMin += effMin
		tier1[k] = bidRange{s: s, lo: 0, hi: effMin}
		hi := ceil
		if s.weight == 0 {
			hi = effMin // weight 0: its minimum only
		}
		tier2[k] = bidRange{s: s, lo: effMin, hi: max(effMin, hi)}
	}
	if left <= sumMin {
		pick(tier1, left)
		return left
	}
	for k := range tier1 {
		tier1[k].s.n = tier1[k].hi
	}
	return sumMin + pick(tier2, left-sumMin)
}

// bidRange is a seat's bids k in [lo, hi) within one tier.
type bidRange struct {
	s      *seat
	lo, hi int64
}

// pick hands out up to r of the bids in ranges, best first, adding each
// seat's count to its n, and returns how many it handed out.
func pick(ranges []bidRange, r int64) int64 {
	var total, positive int64
	var pos, zero []*bidRange
	for k := range ranges {
		b := &ranges[k]
		total += b.hi - b.lo
		if b.hi == b.lo {
			continue
		}
		if b.s.weight > 0 {
			positive += b.hi - b.lo
			pos = append(pos, b)
		} else {
			zero = append(zero, b)
		}
	}
	if total <= r {
		for _, b := range ranges {
			b.s.n += b.hi - b.lo
		}
		return total
	}
	if positive <= r {
		// Every bid of positive weight, then the bids worth 0, a seat's
		// all at once, by tie-break.
		for _, b := range pos {
			b.s.n += b.hi - b.lo
		}
		sort.Slice(zero, func(i, j int) bool {
			a, b := zero[i].s, zero[j].s
			if a.tie != b.tie {
				return a.tie < b.tie
			}
			return a.name < b.name
		})
		rest := r - positive
		for _, b := range zero {
			d := min(rest, b.hi-b.lo)
			b.s.n += d
			rest -= d
		}
		return r
	}

	// Only bids of positive weight are handed out. base: what is surely
	// among the best r.
	base := make([]int64, len(pos))
	if r > 3*int64(len(pos)) { // else the heap alone is as quick
		x, ok := threshold(pos, r)
		for k, b := range pos {
			if ok {
				base[k] = max(0, approxCount(b, x)-1)
			}
		}
	}
	h := make(bidHeap, 0, len(pos))
	var given int64
	for k, b := range pos {
		given += base[k]
		if b.lo+base[k] < b.hi {
			h = append(h, bidHead{r: b, k: b.lo + base[k]})
		}
	}
	heap.Init(&h)
	for ; given < r; given++ {
		top := &h[0]
		top.k++
		if top.k == top.r.hi {
			top.r.s.n += top.k - top.r.lo
			heap.Pop(&h)
			continue
		}
		heap.Fix(&h, 0)
	}
	for _, hd := range h {
		hd.r.s.n += hd.k - hd.r.lo
	}
	return r
}

// threshold finds, by bisection over the float64s, the largest x with
// Σ (approxCount(x) + 1) <= r. Since each approxCount is at most one
// below the exact count of bids worth at least 1/x, those bids number at
// most r, so they are all among the best r. ok is false when even x = 0
// does not fit (r below the number of seats).
func threshold(ranges []*bidRange, r int64) (float64, bool) {
	fits := func(x float64) bool {
		sum := int64(len(ranges))
		for _, b := range ranges {
			sum += approxCount(b, x)
			if sum > r {
				return false
			}
		}
		return true
	}
	if !fits(0) {
		return 0, false
	}
	// 2^40 gives every seat its whole range: weight·x >= 2^40 > 2·hi.
	lo, hi := uint64(0), math.Float64bits(1<<40)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(math.Float64frombits(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Float64frombits(lo), true
}

// approxCount is, within one, how many bids of b are worth at least 1/x:
// the k in [lo, hi) with 2k+1 <= weight·x.
func approxCount(b *bidRange, x float64) int64 {
	v := float64(b.s.weight) * x
	if v >= 2*float64(b.hi) {
		return b.hi - b.lo
	}
	n := (int64(v) + 1) / 2 // k >= 0 with 2k+1 <= floor(v)
	return max(0, min(n, b.hi)-b.lo)
}

// bidHead is a seat's next bid in a tier.
type bidHead struct {
	r *bidRange
	k int64
}

// bidHeap orders next bids best first, as seat.before does within a tier.
type bidHeap []bidHead

func (h bidHeap) Len() int { return len(h) }
func (h bidHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := compareShares(a.r.s.weight, a.k, b.r.s.weight, b.k); c != 0 {
		return c > 0
	}
	if a.r.s.tie != b.r.s.tie {
		return a.r.s.tie < b.r.s.tie
	}
	return a.r.s.name < b.r.s.name
}
func (h bidHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bidHeap) Push(x any)   { *h = append(*h, x.(bidHead)) }
func (h *bidHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// compareShares compares wa/(2ka+1) with wb/(2kb+1) exactly (weights and
// counts are not negative): 1, 0 or -1.
func compareShares(wa, ka, wb, kb int64) int {
	lh, ll := bits.Mul64(uint64(wa), uint64(2*kb+1))
	rh, rl := bits.Mul64(uint64(wb), uint64(2*ka+1))
	switch {
	case lh != rh:
		return cmpU(lh, rh)
	default:
		return cmpU(ll, rl)
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// blockedSeats says which seats a cap held below what the weights would
// have given them: a seat at its cap that ranks above the bid that took
// the last replica (ranks of the winning bids only fall, so it ranked
// above every winner since it reached its cap), or every seat at its cap
// when replicas were left over.
func blockedSeats(seats []*seat, left, handed int64) []bool {
	blocked := make([]bool, len(seats))
	if left == 0 {
		return blocked
	}
	full := func(s *seat) bool { return s.max >= 0 && s.n >= s.max }
	if handed < left {
		for k, s := range seats {
			blocked[k] = full(s)
		}
		return blocked
	}
	// The last winner: the seat whose last replica ranks lowest.
	var last *seat
	var lastBid seat
	for _, s := range seats {
		if s.n == 0 {
			continue
		}
		bid := *s
		bid.n--
		if last == nil || lastBid.before(&bid) {
			last, lastBid = s, bid
		}
	}
	for k, s := range seats {
		blocked[k] = s != last && full(s) && s.before(&lastBid)
	}
	return blocked
}

func clampInt32(v int64) int32 {
	return int32(max(math.MinInt32, min(v, math.MaxInt32)))
}
