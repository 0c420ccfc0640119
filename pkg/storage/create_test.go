package storage

import (
	"testing"

	"github.com/k3s-io/kine/pkg/server"
)

func TestIsCreateOf(t *testing.T) {
	mine := []byte("mine")
	for _, tt := range []struct {
		name string
		kv   *server.KeyValue
		want bool
	}{
		{"the create's row", &server.KeyValue{ModRevision: 7, CreateRevision: 7, Value: mine}, true},
		{"no row: kine acknowledged a failed insert", nil, false},
		{"an update, not a create", &server.KeyValue{ModRevision: 7, CreateRevision: 4, Value: mine}, false},
		{"another writer's value", &server.KeyValue{ModRevision: 7, CreateRevision: 7, Value: []byte("theirs")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isCreateOf(tt.kv, mine); got != tt.want {
				t.Errorf("isCreateOf = %v, want %v", got, tt.want)
			}
		})
	}
}
