package v1alpha1

import "testing"

func TestCellClusterNameRoundTrip(t *testing.T) {
	tests := []struct {
		name, namespace, cell string
	}{
		{"short", "a", "b"},
		{"typical", "tenant-a-prod", "rz00a"},
		{"longest labels", "n23456789012345678901234567890123456789012345678901234567890123", "c23456789012345678901234567890123456789012345678901234567890123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := CellClusterName(tt.namespace, tt.cell)
			ns, cell, ok := ParseCellClusterName(name)
			if !ok || ns != tt.namespace || cell != tt.cell {
				t.Fatalf("ParseCellClusterName(%q) = %q, %q, %v; want %q, %q, true", name, ns, cell, ok, tt.namespace, tt.cell)
			}
			if got, ok := CellOfNamespace(tt.namespace, name); !ok || got != tt.cell {
				t.Fatalf("CellOfNamespace(%q, %q) = %q, %v", tt.namespace, name, got, ok)
			}
			if _, ok := CellOfNamespace(tt.namespace+"x", name); ok {
				t.Fatalf("CellOfNamespace matched another namespace for %q", name)
			}
		})
	}
}

func TestParseCellClusterNameRejects(t *testing.T) {
	for _, name := range []string{"", "cluster1", "a.b.c", ".b", "a.", "A.b", "a.B", "a_b.c", "a..b"} {
		if ns, cell, ok := ParseCellClusterName(name); ok {
			t.Errorf("ParseCellClusterName(%q) = %q, %q, true; want not a cell cluster name", name, ns, cell)
		}
	}
}
