package version

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// DataReadableFrom is the oldest release that reads everything this
// release stores: a rollback to it (or to any release between) loses
// nothing. A release that stores something older ones cannot read raises
// it to itself, and says so in CHANGELOG.md.
const DataReadableFrom = "v0.1.0"

// DataRelease is what the plane's database records of the releases that
// served it (the ConfigMap kube-system/cellfed-data-release): the newest
// release that has served it, and the oldest release that can read what
// they stored.
type DataRelease struct {
	Newest       string
	ReadableFrom string
}

// DecideDataRelease is what a plane of release own, whose data releases
// from ownReadableFrom on can read, does with the record stored ("" fields
// when there is none): refuse to start (err) when own is older than
// stored.ReadableFrom, else the record it keeps (the newer of each), and
// whether that differs from stored. A record it cannot parse is replaced.
func DecideDataRelease(stored DataRelease, own, ownReadableFrom *utilversion.Version) (DataRelease, bool, error) {
	newest, readable := own, ownReadableFrom
	if v, ok := parseRelease(stored.ReadableFrom); ok {
		if own.LessThan(v) {
			return stored, false, fmt.Errorf("this database holds data that cellfed %s stored, which releases older than %s cannot read, and this plane is %s: "+
				"run %s or later, or restore the backup taken before the upgrade to %s (docs/operations.md, \"Upgrades\"); nothing was written",
				orUnknown(stored.Newest), stored.ReadableFrom, release(own), stored.ReadableFrom, orUnknown(stored.Newest))
		}
		if v.GreaterThan(readable) {
			readable = v
		}
	}
	if v, ok := parseRelease(stored.Newest); ok && v.GreaterThan(newest) {
		newest = v
	}
	next := DataRelease{Newest: release(newest), ReadableFrom: release(readable)}
	return next, next != stored, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
