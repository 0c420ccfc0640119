// Package soak is cellfed's fault soak (`make soak`, docs/soak.md): two
// plane replicas on a private MariaDB, cellfed-controller, four member
// kube-apiservers (one behind a tunnel in a network namespace) and a
// workload of continuous releases across three tenants, while a fault
// injector kills and freezes the parts. This file holds the invariants as
// pure functions of what the soak recorded and read; the soak itself is
// TestSoak (soak_test.go), which runs only when CELLFED_SOAK_TIME is set.
package soak

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Key names a federated object (and the member objects it releases,
// which carry the same namespace and name).
type Key struct{ Namespace, Name string }

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Object is what the workload knows of one federated object from the
// plane's answers: which writes were acknowledged (2xx) and which were
// only attempted (the answer was lost or an error; they may have landed).
// Template versions count up from 1 and are written as data "v".
type Object struct {
	Key
	Tenant string
	// Members are the members the object's placed cells live on.
	Members []string
	// CreateAcked: the plane answered the create 2xx (or AlreadyExists
	// to a retry of it). CreateAttempted: a create was sent.
	CreateAcked, CreateAttempted bool
	// AckedVersion is the highest template version the plane
	// acknowledged; AttemptedVersion the highest ever sent.
	AckedVersion, AttemptedVersion int
	// DeleteAcked is when the plane acknowledged the delete (or answered
	// NotFound to a retry of it); zero if not. DeleteAttempted: a delete
	// was sent.
	DeleteAcked     time.Time
	DeleteAttempted bool
	// CreateAckedAt is when the plane acknowledged the create.
	CreateAckedAt time.Time
}

// PlaneObject is a federated object as the plane holds it at the end.
type PlaneObject struct {
	Version  int
	Deleting bool // deletionTimestamp set
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Detail    string
	At        time.Time
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Invariant names, as the summary counts them.
const (
	LostWrite     = "acknowledged write lost"
	CreatedTwice  = "member object created twice"
	TenantLeak    = "object on another tenant's dedicated cluster"
	LateDeletion  = "deletion not finished in time"
	NotConverged  = "member not converged in time"
	MemoryGrowth  = "memory grows without bound"
	HarnessSanity = "plane holds a write never sent"
	HeldBack      = "release held back by another tenant"
)

// LostWrites compares the workload's acknowledged writes with what the
// plane holds once the faults have stopped: an acknowledged create of an
// object never deleted must exist, and hold at least the last
// acknowledged template version (a later one that was only attempted
// may have landed). A version higher than any sent is a harness bug.
func LostWrites(objs []Object, plane map[Key]PlaneObject, at time.Time) []Violation {
	var out []Violation
	for _, o := range objs {
		p, exists := plane[o.Key]
		switch {
		case o.CreateAcked && !o.DeleteAttempted && !exists:
			out = append(out, Violation{LostWrite, fmt.Sprintf("%s: create acknowledged, never deleted, absent from the plane", o.Key), at})
		case exists && p.Version < o.AckedVersion:
			out = append(out, Violation{LostWrite, fmt.Sprintf("%s: plane holds template v%d, v%d was acknowledged", o.Key, p.Version, o.AckedVersion), at})
		case exists && p.Version > o.AttemptedVersion:
			out = append(out, Violation{HarnessSanity, fmt.Sprintf("%s: plane holds template v%d, the workload sent at most v%d", o.Key, p.Version, o.AttemptedVersion), at})
		}
	}
	return out
}

// MemberKey is one object in one member.
type MemberKey struct {
	Member string
	Key
}

func (k MemberKey) String() string { return k.Member + ":" + k.Key.String() }

// Expected is what every member must hold once converged: for each
// object the plane holds and is not deleting, its template version on
// every member of its placed cells. Anything else (objects deleted or
// never created) must be absent.
func Expected(objs []Object, plane map[Key]PlaneObject) map[MemberKey]int {
	want := map[MemberKey]int{}
	for _, o := range objs {
		p, ok := plane[o.Key]
		if !ok || p.Deleting {
			continue
		}
		for _, m := range o.Members {
			want[MemberKey{m, o.Key}] = p.Version
		}
	}
	return want
}

// Diff lists how the members' objects (got: version by member object)
// differ from want, deletions apart: missing and stale objects are
// templates not converged; extra ones are deletions not finished (or
// objects that should never have been created).
func Diff(want, got map[MemberKey]int) (templates, deletions []string) {
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			templates = append(templates, fmt.Sprintf("%s missing (want v%d)", k, v))
		case g != v:
			templates = append(templates, fmt.Sprintf("%s has v%d, want v%d", k, g, v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			deletions = append(deletions, fmt.Sprintf("%s still there (v%d)", k, v))
		}
	}
	sort.Strings(templates)
	sort.Strings(deletions)
	return templates, deletions
}

// PendingDeletions are the objects whose delete was acknowledged but
// which the plane still holds (its finalizer not yet removed).
func PendingDeletions(objs []Object, plane map[Key]PlaneObject) []string {
	var out []string
	for _, o := range objs {
		if _, ok := plane[o.Key]; ok && !o.DeleteAcked.IsZero() {
			out = append(out, o.Key.String()+" still in the plane")
		}
	}
	sort.Strings(out)
	return out
}

// Ledger records every member object the soak's watchers saw, by UID,
// and checks the continuous invariants on each sighting. Not safe for
// concurrent use: the caller locks.
type Ledger struct {
	// Dedicated is the tenant each dedicated member belongs to; members
	// not in it are shared.
	Dedicated map[string]string
	// NamespaceTenant is the tenant of each workspace namespace.
	NamespaceTenant map[string]string

	uids       map[MemberKey][]string
	first      map[MemberKey]time.Time
	violations []Violation
}

// NewLedger is a Ledger for the given tenancy.
func NewLedger(dedicated, namespaceTenant map[string]string) *Ledger {
	return &Ledger{Dedicated: dedicated, NamespaceTenant: namespaceTenant, uids: map[MemberKey][]string{}, first: map[MemberKey]time.Time{}}
}

// Saw records a sighting (an informer's add or update) of a member
// object. Object names are never reused by the workload, so a second
// UID for one member object means the controller created it twice.
func (l *Ledger) Saw(k MemberKey, uid string, at time.Time) {
	if owner, ok := l.Dedicated[k.Member]; ok {
		if t := l.NamespaceTenant[k.Namespace]; t != owner {
			l.violations = append(l.violations, Violation{TenantLeak,
				fmt.Sprintf("%s: tenant %q's object on %s, dedicated to %q", k, t, k.Member, owner), at})
		}
	}
	if _, ok := l.first[k]; !ok {
		l.first[k] = at
	}
	seen := l.uids[k]
	if slices.Contains(seen, uid) {
		return
	}
	l.uids[k] = append(seen, uid)
	if len(seen) > 0 {
		l.violations = append(l.violations, Violation{CreatedTwice,
			fmt.Sprintf("%s: UID %s after %v (the federated object's name is never reused)", k, uid, seen), at})
	}
}

// Violations are those found so far.
func (l *Ledger) Violations() []Violation { return slices.Clone(l.violations) }

// FirstSeen is when each member object was first seen.
func (l *Ledger) FirstSeen() map[MemberKey]time.Time { return maps.Clone(l.first) }

// Sightings is how many member objects were seen.
func (l *Ledger) Sightings() int { return len(l.uids) }

// Count is violations by invariant.
func Count(vs []Violation) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		out[v.Invariant]++
	}
	return out
}

// Invariants are every invariant's name, in the summary's order.
var Invariants = []string{LostWrite, CreatedTwice, TenantLeak, LateDeletion, NotConverged, MemoryGrowth, HeldBack, HarnessSanity}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Outage is a fault's span: from when it broke something until the
// part answered again.
type Outage struct{ Start, End time.Time }

// HeldBackReleases checks that one tenant's flood does not hold back the
// others' releases: every acknowledged create of another tenant reaches
// each of its members within bound (ReleaseTimes).
func HeldBackReleases(objs []Object, firstSeen map[MemberKey]time.Time, outages []Outage, flooder string, bound time.Duration) []Violation {
	var out []Violation
	for _, r := range ReleaseTimes(objs, firstSeen, outages, flooder) {
		if r.Took > bound {
			out = append(out, Violation{HeldBack, fmt.Sprintf("%s: on %s %s after its create was acknowledged (outages apart; bound %s)",
				r.Key, r.Member, r.Took.Round(100*time.Millisecond), bound), r.Seen})
		}
	}
	return out
}

// ReleaseTime is how long an acknowledged create took to reach one
// member, outages apart.
type ReleaseTime struct {
	MemberKey
	Took time.Duration
	Seen time.Time
}

// ReleaseTimes are the creates of the tenants other than flooder: from
// the create's acknowledgement or, when a fault was under way meanwhile,
// from when the last such fault was repaired and its part answered again
// (an outage delays everyone; that is not what is measured), to the first
// sighting on each member. An object never seen on a member is left to
// the convergence invariant.
func ReleaseTimes(objs []Object, firstSeen map[MemberKey]time.Time, outages []Outage, flooder string) []ReleaseTime {
	var out []ReleaseTime
	for _, o := range objs {
		if o.Tenant == flooder || o.CreateAckedAt.IsZero() {
			continue
		}
		for _, m := range o.Members {
			k := MemberKey{m, o.Key}
			seen, ok := firstSeen[k]
			if !ok {
				continue
			}
			from := o.CreateAckedAt
			for _, f := range outages {
				if f.Start.Before(seen) && f.End.After(from) {
					from = f.End
				}
			}
			out = append(out, ReleaseTime{k, seen.Sub(from), seen})
		}
	}
	return out
}
