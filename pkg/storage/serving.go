package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ServingPrefix holds, in a --datastore-override's database, one record
// per plane replica serving its resource from there, named by the
// replica's API server identity (the holder of its identity Lease). A
// split (cellfed-apiserver split --finish) lifts the write freeze only
// once every live replica has one.
const ServingPrefix = "/cellfed/serving/"

// ServingTTL bounds how long a replica's record outlives it: each start
// writes a new identity.
const ServingTTL = time.Hour

// ServingRecord is what a replica writes.
type ServingRecord struct {
	Resource string    `json:"resource"`
	Started  time.Time `json:"started"`
}

// RecordServing writes the serving record of the replica apiServerID into
// each override's database.
func RecordServing(ctx context.Context, overrides []OverrideBackend, apiServerID string, now time.Time) error {
	for _, ov := range overrides {
		if err := recordServing(ctx, ov, apiServerID, now); err != nil {
			return fmt.Errorf("recording that this replica serves %s from %s: %w", GroupResourceString(ov.Resource), ov.Description, err)
		}
	}
	return nil
}

func recordServing(ctx context.Context, ov OverrideBackend, id string, now time.Time) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: ov.Endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := json.Marshal(ServingRecord{Resource: GroupResourceString(ov.Resource), Started: now.UTC()})
	if err != nil {
		return err
	}
	lease, err := c.Grant(ctx, int64(ServingTTL/time.Second))
	if err != nil {
		return err
	}
	_, err = c.Put(ctx, ServingPrefix+id, string(b), clientv3.WithLease(lease.ID))
	return err
}
