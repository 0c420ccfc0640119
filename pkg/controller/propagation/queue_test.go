package propagation

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
)

func TestPendingFirst(t *testing.T) {
	// Keys named p… have work of their own, the others not; "late" gets
	// work while queued.
	for _, tc := range []struct {
		name  string
		ops   []string // "+k": add k; "late": "late" gets work, added again
		want  []string
		owned map[string]bool
	}{
		{"arrival order within each group", []string{"+a", "+p1", "+b", "+p2"}, []string{"p1", "p2", "a", "b"}, nil},
		{"a key queued twice is taken once", []string{"+a", "+a", "+p1", "+p1"}, []string{"p1", "a"}, nil},
		{"a key that gets work moves ahead", []string{"+a", "+late", "+p1", "late"}, []string{"p1", "late", "a"}, nil},
		{"nothing with work: FIFO", []string{"+c", "+b", "+a"}, []string{"c", "b", "a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := map[string]bool{}
			q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: newPendingFirst(func(k string) bool {
				return k[0] == 'p' || work[k]
			})})
			for _, op := range tc.ops {
				if op[0] == '+' {
					q.Add(op[1:])
					continue
				}
				work[op] = true
				q.Add(op)
			}
			if q.Len() != len(tc.want) {
				t.Errorf("Len = %d, want %d", q.Len(), len(tc.want))
			}
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k)
				q.Done(k)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHasOwnWork(t *testing.T) {
	obj := func(gen int64, status map[string]any, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
		u.SetGeneration(gen)
		if status != nil {
			u.Object["status"] = status
		}
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"gone", nil, true},
		{"new, no status", obj(1, nil, false), true},
		{"status of an older generation", obj(3, map[string]any{"observedGeneration": int64(2)}, false), true},
		{"status current", obj(3, map[string]any{"observedGeneration": int64(3)}, false), false},
		{"being deleted", obj(3, map[string]any{"observedGeneration": int64(3)}, true), true},
		{"unreadable status", obj(3, map[string]any{"observedGeneration": "3"}, false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasOwnWork(tc.obj); got != tc.want {
				t.Errorf("hasOwnWork = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFairQueue(t *testing.T) {
	// ops: "+k" adds k; "k" takes the next key, which must be k, and
	// marks it done; "k@d" also tells the queue its reconcile took d.
	// Keys named …/p… have work of their own.
	flood := func(ws string, n int) []string {
		var ops []string
		for i := range n {
			ops = append(ops, fmt.Sprintf("+%s/%d", ws, i))
		}
		return ops
	}
	for _, tc := range []struct {
		name string
		ops  []string
	}{
		{"one workspace: work of their own first, then arrival order",
			[]string{"+a/x", "+a/p1", "+a/y", "+a/p2", "a/p1", "a/p2", "a/x", "a/y"}},
		{"a key queued twice is taken once",
			[]string{"+a/1", "+a/1", "+b/1", "+a/1", "a/1", "b/1"}},
		{"a flood of one workspace delays another's key by one key",
			append(flood("a", 100), "+b/1", "a/0", "b/1", "a/1", "a/2")},
		{"busy workspaces take turns",
			[]string{"+a/1", "+a/2", "+a/3", "+b/1", "+b/2", "+c/1", "a/1", "b/1", "c/1", "a/2", "b/2", "a/3"}},
		{"a slow workspace gets fewer turns",
			[]string{"+a/1", "+a/2", "+b/1", "+b/2", "+b/3", "+b/4", "a/1@1s", "b/1", "b/2", "b/3", "b/4", "a/2"}},
		{"a slow workspace waits for the time others were served",
			[]string{"+a/1", "+a/2", "+b/1", "+b/2", "+b/3", "a/1@20ms", "b/1@5ms", "b/2@5ms", "b/3@5ms", "a/2"}},
		{"an idle workspace earns no credit",
			[]string{"+b/1", "b/1@1ms", "+a/1", "+a/2", "+a/3", "a/1@10ms", "a/2@10ms",
				"+b/2", "+b/3", "+b/4", "b/2@5ms", "b/3@5ms", "a/3", "b/4"}},
		{"cluster-scoped keys are one workspace",
			[]string{"+x", "+y", "+a/1", "x", "a/1", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fq := newFairQueue(func(k string) bool { return strings.Contains(k, "/p") })
			q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: fq})
			defer q.ShutDown()
			for i, op := range tc.ops {
				if op[0] == '+' {
					q.Add(op[1:])
					continue
				}
				want, cost, charge := strings.Cut(op, "@")
				if q.Len() == 0 {
					t.Fatalf("op %d: queue empty, want %s", i, want)
				}
				got, _ := q.Get()
				if got != want {
					t.Fatalf("op %d: took %s, want %s", i, got, want)
				}
				if charge {
					d, err := time.ParseDuration(cost)
					if err != nil {
						t.Fatal(err)
					}
					fq.Charge(got, d)
				}
				q.Done(got)
			}
		})
	}
}

// popLog is a Queue that records the order keys are taken in.
type popLog struct {
	*fairQueue
	// taken is every key taken; bAt the number taken when b/1 came.
	taken []string
	bAt   int
}

func (l *popLog) Push(key string) {
	if key == "b/1" {
		l.bAt = len(l.taken)
	}
	l.fairQueue.Push(key)
}

func (l *popLog) Pop() string {
	key := l.fairQueue.Pop()
	l.taken = append(l.taken, key)
	return key
}

// TestFairQueueWorkers runs the controller's kind of queue (rate
// limited, delaying, fair) with workers: workspace a keeps 200 keys
// queued, each requeued when done; b's single key must be taken after at
// most one key of a (the one other busy workspace), no key is processed
// by two workers at once, and shutting down stops the workers.
func TestFairQueueWorkers(t *testing.T) {
	const workers, flood = 4, 200
	for _, tc := range []struct {
		name string
		// failing: a's reconciles fail (rate-limited requeue) rather
		// than succeed and requeue at once.
		failing bool
	}{
		{"flood of successful reconciles", false},
		{"flood of failing reconciles", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &popLog{fairQueue: newFairQueue(func(string) bool { return true })}
			limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Microsecond, time.Millisecond)
			q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{
				DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
					Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: log}),
				}),
			})
			for i := range flood {
				q.Add(fmt.Sprintf("a/%d", i))
			}
			var (
				mu         sync.Mutex
				processing = map[string]bool{}
				twice      []string
				done       = map[string]int{}
			)
			bDone := make(chan struct{})
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						key, quit := q.Get()
						if quit {
							return
						}
						mu.Lock()
						if processing[key] {
							twice = append(twice, key)
						}
						processing[key] = true
						done[key]++
						n := done[key]
						mu.Unlock()
						log.Charge(key, time.Millisecond)
						mu.Lock()
						delete(processing, key)
						mu.Unlock()
						switch {
						case key == "b/1":
							close(bDone)
						case tc.failing:
							q.AddRateLimited(key)
						default:
							q.Forget(key)
							q.Add(key)
						}
						if n == 3 && key == "a/0" {
							// a has been taken a few hundred times: now b.
							q.Add("b/1")
						}
						q.Done(key)
					}
				}()
			}
			select {
			case <-bDone:
			case <-time.After(30 * time.Second):
				t.Fatal("b/1 not taken in 30s")
			}
			q.ShutDown()
			stopped := make(chan struct{})
			go func() { wg.Wait(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("workers still running 10s after the queue shut down")
			}
			if len(twice) > 0 {
				t.Errorf("keys processed by two workers at once: %v", twice)
			}
			// log is read after the workers stopped: no lock needed.
			at := slices.Index(log.taken, "b/1")
			if at < 0 {
				t.Fatalf("b/1 never taken")
			}
			if others := at - log.bAt; others > 1 {
				t.Errorf("b/1 taken after %d keys of a, want at most 1", others)
			}
		})
	}
}
