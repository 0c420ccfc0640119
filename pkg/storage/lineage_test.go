package storage

import (
	"strings"
	"testing"
	"time"
)

func TestDecideLineage(t *testing.T) {
	mark := servedMark{Server: "db-1:3306 server_id=1", Revision: 5000}
	cases := []struct {
		name   string
		s      lineageState
		jumpTo int64
		refuse string
	}{
		{name: "first start: nothing served", s: lineageState{server: "db-1:3306 server_id=1", hasTable: true, storeMax: 10}},
		{name: "restart on the same server", s: lineageState{mark: mark, hasMark: true, server: mark.Server, hasTable: true, storeMax: 5200}},
		{name: "same server behind the mark (lost writes or a restore)", s: lineageState{mark: mark, hasMark: true, server: mark.Server, hasTable: true, storeMax: 4000},
			jumpTo: 5000 + 7},
		{name: "failover to a replica behind the mark", s: lineageState{mark: mark, hasMark: true, server: "db-2:3306 server_id=2", hasTable: true, storeMax: 4990},
			jumpTo: 5000 + 7},
		{name: "failover to a replica level with the mark: it may still miss writes served since", s: lineageState{mark: mark, hasMark: true, server: "db-2:3306 server_id=2", hasTable: true, storeMax: 5003},
			jumpTo: 5003 + 7},
		{name: "another replica already jumped on the new server", s: lineageState{mark: mark, hasMark: true, server: "db-2:3306 server_id=2", hasTable: true, storeMax: 5010, jumped: 5007}},
		{name: "an older jump on this server does not cover newer writes", s: lineageState{mark: mark, hasMark: true, server: "db-2:3306 server_id=2", hasTable: true, storeMax: 4990, jumped: 900},
			jumpTo: 5000 + 7},
		{name: "a server without kine's table is not the plane's data", s: lineageState{mark: mark, hasMark: true, server: "db-3:3306 server_id=3"},
			refuse: "holds no kine table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideLineage(tc.s, 7)
			if tc.refuse != "" {
				if d.refuse == nil || !strings.Contains(d.refuse.Error(), tc.refuse) {
					t.Fatalf("refuse = %v, want one saying %q", d.refuse, tc.refuse)
				}
				return
			}
			if d.refuse != nil {
				t.Fatalf("refused: %v", d.refuse)
			}
			if d.jumpTo != tc.jumpTo {
				t.Errorf("jumpTo = %d, want %d (reason %q)", d.jumpTo, tc.jumpTo, d.reason)
			}
			if (d.jumpTo > 0) != (d.reason != "") {
				t.Errorf("jump %d with reason %q", d.jumpTo, d.reason)
			}
		})
	}
}

func TestServedMarkRoundTrip(t *testing.T) {
	dir := markPath(t.TempDir(), "")
	if _, ok, err := readServedMark(dir); ok || err != nil {
		t.Fatalf("empty dir: ok=%v err=%v", ok, err)
	}
	want := servedMark{Server: "db-1:3306 server_id=1", Revision: 42, Time: time.Unix(1700000000, 0).UTC()}
	if err := writeServedMark(dir, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := readServedMark(dir)
	if err != nil || !ok || got != want {
		t.Fatalf("read %+v ok=%v err=%v, want %+v", got, ok, err, want)
	}
}
