package kinedata

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDiff(t *testing.T) {
	a := func(rows ...Row) map[string]KeyHash {
		h := NewKeyHashes()
		for _, r := range rows {
			h.Add(r)
		}
		return h.Sums()
	}
	base := []Row{{ID: 1, Name: "/a", Value: []byte("1")}, {ID: 2, Name: "/b", Value: []byte("2")}, {ID: 3, Name: "/a", PrevRevision: 1, Value: []byte("3")}}
	for _, tc := range []struct {
		name                    string
		target                  []Row
		missing, extra, changed []string
	}{
		{name: "equal", target: base},
		{name: "missing key", target: []Row{base[0], base[2]}, missing: []string{"/b"}},
		{name: "missing revision of a key", target: []Row{base[0], base[1]}, changed: []string{"/a"}},
		{name: "extra key", target: append(append([]Row{}, base...), Row{ID: 4, Name: "/c"}), extra: []string{"/c"}},
		{name: "value differs", target: []Row{base[0], {ID: 2, Name: "/b", Value: []byte("x")}, base[2]}, changed: []string{"/b"}},
		{name: "revision differs", target: []Row{base[0], {ID: 5, Name: "/b", Value: []byte("2")}, base[2]}, changed: []string{"/b"}},
		{name: "create revision differs", target: []Row{base[0], {ID: 2, Name: "/b", CreateRevision: 7, Value: []byte("2")}, base[2]}, changed: []string{"/b"}},
		{name: "lease differs", target: []Row{base[0], {ID: 2, Name: "/b", Lease: 60, Value: []byte("2")}, base[2]}, changed: []string{"/b"}},
		{name: "old value differs", target: []Row{base[0], base[1], {ID: 3, Name: "/a", PrevRevision: 1, Value: []byte("3"), OldValue: []byte("1")}}, changed: []string{"/a"}},
		{name: "NULL and empty are alike", target: []Row{{ID: 1, Name: "/a", Value: []byte("1"), OldValue: []byte{}}, base[1], base[2]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(a(base...), a(tc.target...))
			if !equal(d.Missing, tc.missing) || !equal(d.Extra, tc.extra) || !equal(d.Changed, tc.changed) {
				t.Fatalf("got %+v, want missing %v extra %v changed %v", d, tc.missing, tc.extra, tc.changed)
			}
			if d.Empty() != (len(tc.missing)+len(tc.extra)+len(tc.changed) == 0) {
				t.Fatalf("Empty() = %v for %+v", d.Empty(), d)
			}
			if !d.Empty() && !strings.Contains(d.String(), "key(s)") {
				t.Fatalf("String() does not list the keys: %q", d.String())
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		targetMax int64
		mode      StartMode
		after     int64
		wipe      bool
		err       bool
	}{
		{name: "empty target", mode: StartRefuse},
		{name: "empty target with resume", mode: StartResume},
		{name: "non-empty target refused", targetMax: 40, mode: StartRefuse, err: true},
		{name: "resume after the target's rows", targetMax: 40, mode: StartResume, after: 40},
		{name: "force wipes", targetMax: 40, mode: StartForce, wipe: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, wipe, err := Start(tc.targetMax, tc.mode)
			if after != tc.after || wipe != tc.wipe || (err != nil) != tc.err {
				t.Fatalf("Start(%d, %v) = %d, %v, %v", tc.targetMax, tc.mode, after, wipe, err)
			}
			if err != nil && !errors.Is(err, ErrTargetNotEmpty) {
				t.Fatalf("error %v is not ErrTargetNotEmpty", err)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct{ max, batch, from, to int64 }{
		{100, 30, 70, 100},
		{20, 30, 0, 20},
	} {
		if from, to := Overlap(tc.max, tc.batch); from != tc.from || to != tc.to {
			t.Errorf("Overlap(%d, %d) = %d, %d, want %d, %d", tc.max, tc.batch, from, to, tc.from, tc.to)
		}
	}
}

func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		p    Progress
		at   time.Duration
		want string
	}{
		{"a quarter in 10 s", Progress{Total: 4000, Done: 1000, Started: t0}, 10 * time.Second, "copied 1000/4000 rows (25.0%), 100 rows/s, ETA 30s"},
		{"nothing yet", Progress{Total: 10, Started: t0}, 0, "copied 0/10 rows (0.0%), 0 rows/s, ETA unknown"},
		{"done", Progress{Total: 10, Done: 10, Started: t0}, time.Second, "copied 10/10 rows (100.0%), 10 rows/s, ETA 0s"},
		{"nothing to copy", Progress{Started: t0}, time.Second, "copied 0/0 rows (100.0%), 0 rows/s, ETA 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Line(t0.Add(tc.at)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRestoreRevision(t *testing.T) {
	for _, tc := range []struct {
		name                                 string
		backup, overwritten, seen, gap, want int64
	}{
		{"above the overwritten store", 500, 1000, 0, 1, 1001},
		{"above what the operator says clients saw", 500, 0, 7000, 10, 7010},
		{"into an empty database: the gap above the backup", 500, 0, 0, DefaultRevisionGap, 500 + DefaultRevisionGap},
		{"a gap of 0 still starts above", 500, 500, 0, 0, 501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RestoreRevision(tc.backup, tc.overwritten, tc.seen, tc.gap); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFileRoundTripAndDamage(t *testing.T) {
	rows := []Row{
		{ID: 1, Name: CompactKey, Created: 1},
		{ID: 2, Name: "/registry/secrets/a", Created: 1, Value: []byte("k8s:enc:kms:v2:x\x00\xff")},
		{ID: 3, Name: "/registry/secrets/a", CreateRevision: 2, PrevRevision: 2, Lease: 30, Value: []byte("v2"), OldValue: []byte("k8s:enc:kms:v2:x\x00\xff")},
		{ID: 9, Name: "/registry/secrets/a", Deleted: 1, CreateRevision: 2, PrevRevision: 3, OldValue: []byte("v2")},
	}
	var buf bytes.Buffer
	w, err := NewFileWriter(&buf, Header{Backend: "sqlite", MaxRevision: 9, Rows: int64(len(rows))})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) ([]Row, error) {
		r, err := NewFileReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		var out []Row
		for {
			row, err := r.Next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, row)
		}
	}
	got, err := read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(rows))
	}
	for i := range rows {
		if RowHash(got[i]) != RowHash(rows[i]) {
			t.Fatalf("row %d: got %+v, want %+v", i, got[i], rows[i])
		}
	}
	t.Run("truncated", func(t *testing.T) {
		if _, err := read(buf.Bytes()[:buf.Len()-30]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a truncated file read without ErrCorrupt: %v", err)
		}
	})
	t.Run("row count in the header differs", func(t *testing.T) {
		var b bytes.Buffer
		w, _ := NewFileWriter(&b, Header{Rows: 5})
		_ = w.Write(rows[0])
		_ = w.Close()
		if _, err := read(b.Bytes()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("want ErrCorrupt, got %v", err)
		}
	})
	t.Run("not a backup", func(t *testing.T) {
		if _, err := read([]byte("hello")); err == nil {
			t.Fatal("read a non-backup without error")
		}
	})
}
