// Package admission validates and initialises federation objects: federated
// objects in both versions, Cells and KubeFedClusters. The rules are plain
// functions of a Request and a Lookup of the plane's current state; they
// run in-process in cellfed-apiserver (Plugin) and behind an admission
// webhook in cellfed-webhook (Handler).
//
// Every rejection is an Invalid or Forbidden API status with field paths,
// so kubectl shows what is wrong and where.
package admission
