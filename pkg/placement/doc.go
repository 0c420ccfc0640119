// Package placement is where a federated object goes: which clusters or
// cells its placement selects (names, or a label selector with cellfed's
// meaning) and its placement mask, the part of the placement a staged
// release acts on. Admission, the propagation controller, the rollout
// library and its controller, and cellfedctl read and write placements
// through it; conversion only translates them between versions.
package placement
