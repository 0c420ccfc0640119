package division

// Bounds on what a division accepts. Admission refuses anything beyond
// them, so no tenant's division can be asked for more than this; Divide
// itself handles anything up to MaxInt32 in O(cells log cells).
const (
	// MaxReplicas bounds a divided workload's replicas and each
	// topology's minReplicas, maxReplicas, and maxSurge.
	MaxReplicas = 1_000_000
	// MaxWeight bounds a topology's weight.
	MaxWeight = 1_000_000
)
