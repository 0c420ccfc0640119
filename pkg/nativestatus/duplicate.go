package nativestatus

// podCounts are a replicated workload's pod counts over its cells, in the
// terms of the plane's spec.replicas (want):
//
//   - replicas divided among the cells (Input.Divided: replicaDivision
//     mode Divide): spec.replicas is the total, so the counts are summed;
//   - replicas duplicated (the default: each cell runs spec.replicas in
//     full, or its own override): each count is want times the smallest
//     share of its pods any cell reports it for, so a count reaches want
//     only when it does in every cell. replicas is want once every cell
//     reports, and unavailable what is not available of it.
//
// Summing duplicated cells would report twice spec.replicas on two
// cells, and kstatus (Helm's --wait) reads more replicas than specified
// as pods still terminating: it would never call the Deployment current.
func podCounts(in Input, want int64, all, updated, ready, available, unavailable string) counts {
	if in.Divided {
		return sumPods(in.Cells, all, updated, ready, available, unavailable)
	}
	if len(in.Cells) == 0 {
		return counts{}
	}
	n := counts{replicas: want, updated: want, ready: want, available: want}
	for _, c := range in.Cells {
		if !c.reported() {
			// Never reported (no status, or none its controller wrote
			// yet): nothing runs there yet.
			n = counts{}
			break
		}
		cn := sumPods([]Cell{c}, all, updated, ready, available, unavailable)
		n.updated = min(n.updated, share(want, cn.updated, cn.replicas))
		n.ready = min(n.ready, share(want, cn.ready, cn.replicas))
		n.available = min(n.available, share(want, cn.available, cn.replicas))
	}
	if updated == "" {
		n.updated = 0
	}
	n.unavailable = max(n.replicas-n.available, 0)
	return n
}

// share is want scaled by part/whole, rounded down: a cell running none
// of its pods (whole 0) has all it should.
func share(want, part, whole int64) int64 {
	if whole <= 0 {
		return want
	}
	part = min(part, whole)
	if want > 0 && part > 0 && want > (1<<62)/part {
		return want / whole * part // too large to multiply first
	}
	return want * part / whole
}
