package cellfedctl

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// TestRolloutStatusWatchPollsEverySecond: `rollout status --watch` reads
// the object once a second (docs/limitations.md). The options are the
// command's own; a fake clock advanced 100 ms at a time over 3.9 s sees
// the object read at 1 s, 2 s and 3 s of the watch, and at no other time.
func TestRolloutStatusWatchPollsEverySecond(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	// Released rz00a is not updated: the rollout is never done, so the
	// watch goes on reading until it is stopped.
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), fedObj(3, "10", nil))
	reads := make(chan time.Duration, 100) // when each GET came, on the fake clock
	client.PrependReactor("get", "federateddeployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		reads <- clk.Since(start)
		return false, nil, nil
	})
	tg := &target{c: &planeClients{Clients: federatedtypes.Clients{Dynamic: client}}, ns: "shop", name: "web",
		typ: fedType{Kind: "FederatedDeployment", Plural: "federateddeployments", Group: "types.kubefed.io"}}
	if err := tg.read(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-reads // the first read, before the watch
	v := viewOf(tg)
	if v.done || v.stuck != "" {
		t.Fatalf("the object is done (%v) or stuck (%q) already:\n%s", v.done, v.stuck, v.text)
	}

	var out bytes.Buffer
	s := newRolloutStatusOptions(&rolloutOptions{options: &options{name: "cellfedctl",
		streams: genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard}}, now: time.Now})
	s.watch = true
	s.clock = clk
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.follow(ctx, tg, v) }()
	for deadline := time.Now().Add(30 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch made no ticker in 30 s")
		}
	}

	// At each whole second the step is held until the read it starts has
	// come; a read the steps before a whole second start shows up in got.
	var got []time.Duration
	const step = 100 * time.Millisecond
	for elapsed := step; elapsed < 4*time.Second; elapsed += step {
		clk.Step(step)
		if elapsed%time.Second != 0 {
			continue
		}
		select {
		case d := <-reads:
			got = append(got, d)
		case <-time.After(30 * time.Second):
			t.Fatalf("no read %s into the watch (reads at %v)", elapsed, got)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stopped watching federateddeployment shop/web before it was done") {
			t.Errorf("stopped watch: err %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end in 30 s after its context was cancelled")
	}
	for len(reads) > 0 {
		got = append(got, <-reads)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("reads at %v into the watch, want %v (once a second)", got, want)
	}
	if out.Len() != 0 {
		t.Errorf("the unchanged table was printed again:\n%s", out.String())
	}
}
