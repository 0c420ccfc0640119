package soak

import (
	"slices"
	"testing"
	"time"
)

func TestLostWrites(t *testing.T) {
	k := Key{"t-acme", "soak-acme-1"}
	now := time.Now()
	for _, tc := range []struct {
		name  string
		obj   Object
		plane map[Key]PlaneObject
		want  []string // invariants
	}{
		{"acked create present", Object{Key: k, CreateAcked: true, AckedVersion: 1, AttemptedVersion: 1}, map[Key]PlaneObject{k: {Version: 1}}, nil},
		{"acked create absent", Object{Key: k, CreateAcked: true, AckedVersion: 1, AttemptedVersion: 1}, nil, []string{LostWrite}},
		{"unacked create absent", Object{Key: k, CreateAttempted: true, AttemptedVersion: 1}, nil, nil},
		{"deleted, absent", Object{Key: k, CreateAcked: true, AckedVersion: 1, AttemptedVersion: 1, DeleteAttempted: true}, nil, nil},
		{"acked update lost", Object{Key: k, CreateAcked: true, AckedVersion: 3, AttemptedVersion: 3}, map[Key]PlaneObject{k: {Version: 2}}, []string{LostWrite}},
		{"unacked update landed", Object{Key: k, CreateAcked: true, AckedVersion: 3, AttemptedVersion: 4}, map[Key]PlaneObject{k: {Version: 4}}, nil},
		{"unacked update did not land", Object{Key: k, CreateAcked: true, AckedVersion: 3, AttemptedVersion: 4}, map[Key]PlaneObject{k: {Version: 3}}, nil},
		{"version never sent", Object{Key: k, CreateAcked: true, AckedVersion: 3, AttemptedVersion: 3}, map[Key]PlaneObject{k: {Version: 5}}, []string{HarnessSanity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range LostWrites([]Object{tc.obj}, tc.plane, now) {
				got = append(got, v.Invariant)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpectedAndDiff(t *testing.T) {
	a := Key{"t-acme", "soak-acme-1"}
	b := Key{"t-acme", "soak-acme-2"}
	c := Key{"t-acme", "soak-acme-3"}
	objs := []Object{
		{Key: a, Members: []string{"member-0", "member-1"}},
		{Key: b, Members: []string{"member-0", "member-1"}},
		{Key: c, Members: []string{"member-0", "member-1"}},
	}
	plane := map[Key]PlaneObject{a: {Version: 4}, b: {Version: 2, Deleting: true}}
	want := Expected(objs, plane)
	if len(want) != 2 || want[MemberKey{"member-0", a}] != 4 || want[MemberKey{"member-1", a}] != 4 {
		t.Fatalf("Expected = %v", want)
	}
	for _, tc := range []struct {
		name                 string
		got                  map[MemberKey]int
		templates, deletions int
	}{
		{"converged", map[MemberKey]int{{"member-0", a}: 4, {"member-1", a}: 4}, 0, 0},
		{"stale", map[MemberKey]int{{"member-0", a}: 3, {"member-1", a}: 4}, 1, 0},
		{"missing", map[MemberKey]int{{"member-0", a}: 4}, 1, 0},
		{"deleting object still on a member", map[MemberKey]int{{"member-0", a}: 4, {"member-1", a}: 4, {"member-1", b}: 2}, 0, 1},
		{"never created, yet on a member", map[MemberKey]int{{"member-0", a}: 4, {"member-1", a}: 4, {"member-0", c}: 1}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			templates, deletions := Diff(want, tc.got)
			if len(templates) != tc.templates || len(deletions) != tc.deletions {
				t.Errorf("templates %v, deletions %v; want %d and %d", templates, deletions, tc.templates, tc.deletions)
			}
		})
	}
}

func TestPendingDeletions(t *testing.T) {
	a, b := Key{"t-acme", "soak-acme-1"}, Key{"t-acme", "soak-acme-2"}
	objs := []Object{{Key: a, DeleteAcked: time.Now()}, {Key: b}}
	if got := PendingDeletions(objs, map[Key]PlaneObject{b: {}}); len(got) != 0 {
		t.Errorf("undeleted object counted: %v", got)
	}
	if got := PendingDeletions(objs, map[Key]PlaneObject{a: {Deleting: true}}); len(got) != 1 {
		t.Errorf("deleted object still in the plane not counted: %v", got)
	}
}

func TestLedger(t *testing.T) {
	acme := Key{"t-acme", "soak-acme-1"}
	beta := Key{"t-beta", "soak-beta-1"}
	for _, tc := range []struct {
		name      string
		sightings []MemberKey
		uids      []string
		want      []string
	}{
		{"same object seen again (relist, update)", []MemberKey{{"member-0", acme}, {"member-0", acme}}, []string{"u1", "u1"}, nil},
		{"one name on two members", []MemberKey{{"member-0", acme}, {"member-1", acme}}, []string{"u1", "u2"}, nil},
		{"created twice", []MemberKey{{"member-0", acme}, {"member-0", acme}}, []string{"u1", "u2"}, []string{CreatedTwice}},
		{"own tenant on its dedicated cluster", []MemberKey{{"member-2", beta}}, []string{"u1"}, nil},
		{"other tenant on a dedicated cluster", []MemberKey{{"member-1", beta}}, []string{"u1"}, []string{TenantLeak}},
		{"any tenant on the shared cluster", []MemberKey{{"member-0", beta}, {"member-0", acme}}, []string{"u1", "u2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(map[string]string{"member-1": "acme", "member-2": "beta"}, map[string]string{"t-acme": "acme", "t-beta": "beta"})
			for i, k := range tc.sightings {
				l.Saw(k, tc.uids[i], time.Now())
			}
			var got []string
			for _, v := range l.Violations() {
				got = append(got, v.Invariant)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"Name:\tx\nVmRSS:\t  204800 kB\nVmData: 1 kB\n", 200, false},
		{"Name:\tkthreadd\n", 0, true},
		{"VmRSS:\t12 MB\n", 0, true},
	} {
		got, err := ParseVmRSS(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseVmRSS(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestUnbounded(t *testing.T) {
	series := func(f func(minute float64) float64) []RSSSample {
		var s []RSSSample
		for i := range 40 {
			at := time.Duration(i) * 30 * time.Second
			s = append(s, RSSSample{At: at, MiB: f(at.Minutes())})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    []RSSSample
		want bool
	}{
		{"flat", series(func(float64) float64 { return 300 }), false},
		{"warm-up then flat", series(func(m float64) float64 { return min(300, 100+100*m) }), false},
		{"saw-tooth (GC)", series(func(m float64) float64 { return 300 + 50*modulo(m, 2) }), false},
		{"steady growth", series(func(m float64) float64 { return 200 + 40*m }), true},
		{"too few samples", []RSSSample{{0, 1}, {time.Minute, 1000}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := Unbounded(tc.s); got != tc.want {
				t.Errorf("Unbounded = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func modulo(x, y float64) float64 { return x - y*float64(int(x/y)) }

func TestHeldBackReleases(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := Key{"t-acme", "soak-acme-1"}
	obj := func(tenant string, acked int) Object {
		o := Object{Key: k, Tenant: tenant, Members: []string{"member-0", "member-1"}, CreateAcked: true}
		if acked >= 0 {
			o.CreateAckedAt = at(acked)
		}
		return o
	}
	seen := func(s0, s1 int) map[MemberKey]time.Time {
		m := map[MemberKey]time.Time{}
		if s0 >= 0 {
			m[MemberKey{"member-0", k}] = at(s0)
		}
		if s1 >= 0 {
			m[MemberKey{"member-1", k}] = at(s1)
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		obj     Object
		seen    map[MemberKey]time.Time
		outages []Outage
		want    int
	}{
		{"on both members in time", obj("acme", 0), seen(5, 10), nil, 0},
		{"late on one member", obj("acme", 0), seen(5, 61), nil, 1},
		{"late on both", obj("acme", 0), seen(70, 90), nil, 2},
		{"the flooder's own objects are not judged", obj("beta", 0), seen(70, 90), nil, 0},
		{"late, but an outage was under way", obj("acme", 0), seen(5, 80), []Outage{{at(10), at(30)}}, 0},
		{"late even counting from the outage's end", obj("acme", 0), seen(5, 100), []Outage{{at(10), at(30)}}, 1},
		{"an outage before the create does not count", obj("acme", 50), seen(55, 120), []Outage{{at(10), at(30)}}, 1},
		{"an outage after the sighting does not count", obj("acme", 0), seen(5, 70), []Outage{{at(80), at(90)}}, 1},
		{"never seen: left to the convergence check", obj("acme", 0), seen(-1, -1), nil, 0},
		{"create never acknowledged: not judged", obj("acme", -1), seen(70, 90), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HeldBackReleases([]Object{tc.obj}, tc.seen, tc.outages, "beta", 60*time.Second)
			if len(got) != tc.want {
				t.Errorf("%d violations %v, want %d", len(got), got, tc.want)
			}
			for _, v := range got {
				if v.Invariant != HeldBack {
					t.Errorf("invariant %q, want %q", v.Invariant, HeldBack)
				}
			}
		})
	}
}
