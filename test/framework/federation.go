package framework

import (
	"strconv"
	"strings"
)

// Tenancy is the federation fixture tests and benchmarks start from, as
// kubectl input: two tenant workspaces (shop of acme, shop2 of beta), a
// plain namespace, two physical clusters, and cells: shop/rz00a and
// shop/rz01a on member1, shop/rz10a on member2, shop2/rz00a on member1.
// Per-cell KubeFedClusters are created the way the cell controller will
// (named by the rule, labelled with the cell's topology), so selectors can
// be evaluated against them. Cluster endpoints are never dialled.
var Tenancy = TenantNamespaces + `---
apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: v1
kind: Secret
metadata: {name: member-token, namespace: kube-federation-system}
stringData: {token: not-a-real-token}
` + physicalCluster("member1", 1) + physicalCluster("member2", 2) +
	cell("shop", "rz00a", "z1", "member1") + cell("shop", "rz01a", "z2", "member1") +
	cell("shop", "rz10a", "z2", "member2") + cell("shop2", "rz00a", "z2", "member1") +
	perCellCluster("shop", "rz00a", "z1", 1) + perCellCluster("shop", "rz01a", "z2", 1) +
	perCellCluster("shop", "rz10a", "z2", 2) + perCellCluster("shop2", "rz00a", "z2", 1)

// TenantNamespaces are the two tenant workspaces, as kubectl input:
// shop (tenant acme) and shop2 (tenant beta), both workspace prod.
const TenantNamespaces = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {cellfed.io/tenant: acme, cellfed.io/workspace: prod}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop2, labels: {cellfed.io/tenant: beta, cellfed.io/workspace: prod}}
`

// CellPlacement is a v1beta2 placement on the named cells, as YAML flow:
// {topologyType: cell, topologies: [{name: a}, {name: b}]}.
func CellPlacement(cells ...string) string {
	tops := make([]string, len(cells))
	for i, c := range cells {
		tops[i] = "{name: " + c + "}"
	}
	return "{topologyType: cell, topologies: [" + strings.Join(tops, ", ") + "]}"
}

func physicalCluster(name string, port int) string {
	return `---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: ` + name + `, namespace: kube-federation-system}
spec: {apiEndpoint: "https://127.0.0.1:` + strconv.Itoa(port) + `", secretRef: {name: member-token}}
`
}

func cell(ns, name, zone, cluster string) string {
	return `---
apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {zone: ` + zone + `}}
spec: {cluster: ` + cluster + `}
`
}

func perCellCluster(ns, cell, zone string, port int) string {
	return `---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata:
  name: ` + ns + "." + cell + `
  namespace: kube-federation-system
  labels: {cellfed.io/topology-type: cell, cellfed.io/namespace: ` + ns + `, cellfed.io/cell: ` + cell + `, zone: ` + zone + `}
spec: {apiEndpoint: "https://127.0.0.1:` + strconv.Itoa(port) + `", secretRef: {name: member-token}}
`
}
