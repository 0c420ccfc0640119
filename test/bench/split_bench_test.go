package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkOnlineSplit measures `cellfed-apiserver split` on a plane whose
// embedded SQLite holds CELLFED_BENCH_SPLIT_OBJECTS config maps (default
// 10,000): it moves core/configmaps to a MariaDB database of their own,
// restarts the plane with the override and finishes. Reported: the
// write freeze end to end (split, restart, finish) and its parts, and
// config map creates/s (16 writers) before and after the split.
func BenchmarkOnlineSplit(b *testing.B) {
	objects := 10000
	if s := os.Getenv("CELLFED_BENCH_SPLIT_OBJECTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 16 {
			b.Fatalf("CELLFED_BENCH_SPLIT_OBJECTS=%q: want a number ≥ 16", s)
		}
		objects = n
	}
	const writers = 16
	for range b.N {
		plane := framework.StartPlane(b, framework.PlaneOptions{})
		c := plane.Client(b)
		createConcurrently(b, c, "warm", 4, 25)
		before := createConcurrently(b, c, "before", writers, objects/writers)
		target := framework.NewDatabase(b)
		ctx := context.Background()
		run := func(args ...string) time.Duration {
			start := time.Now()
			cmd := exec.CommandContext(ctx, framework.Binary(b, "cellfed-apiserver"), append([]string{"split", "--kubeconfig=" + plane.Kubeconfig,
				"--resource=core/configmaps", "--to=" + target}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("split %v: %v\n%s", args, err, out)
			}
			return time.Since(start)
		}
		copyTook := run("--from=" + plane.DataDir)
		restartStart := time.Now()
		plane.Stop(30 * time.Second)
		if err := plane.RestartWith("--datastore-override=core/configmaps=" + target); err != nil {
			b.Fatal(err)
		}
		if err := plane.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		restartTook := time.Since(restartStart)
		finishTook := run("--finish")
		frozen := copyTook + restartTook + finishTook
		after := createConcurrently(b, plane.Client(b), "after", writers, objects/writers)
		plane.Stop(10 * time.Second)
		b.ReportMetric(frozen.Seconds(), "s-frozen")
		b.ReportMetric(copyTook.Seconds(), "s-freeze+copy")
		b.ReportMetric(restartTook.Seconds(), "s-restart")
		b.ReportMetric(before, "creates/s-before")
		b.ReportMetric(after, "creates/s-after")
		fmt.Printf("split of %d config maps (SQLite → MariaDB): writes frozen %.1f s (freeze + copy + verify %.1f s, plane restart %.1f s, finish %.1f s); creates/s %.0f before, %.0f after\n",
			objects+100, frozen.Seconds(), copyTook.Seconds(), restartTook.Seconds(), finishTook.Seconds(), before, after)
	}
}
