package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// BenchmarkClusterLockUnlock is BenchmarkLockUnlock's uncontended Lock and
// Unlock on a Redis Cluster (three primaries with a replica each) beside
// the same on a lone server, in the same run, in both modes, and on the
// cluster with WithReplicaAck(1, 1s) too. The cluster costs the same two
// round trips; the ratio is the client's routing and the primary's
// replication stream. Compare with
//
//	benchstat -col /server
func BenchmarkClusterLockUnlock(b *testing.B) {
	single := redistest.Start(b)
	c := redistest.StartCluster(b, 3, 1)
	ack := lock.WithReplicaAck(1, time.Second)
	for _, mode := range []string{"fast", "fair"} {
		for _, srv := range []struct {
			name string
			addr string
			opts []lock.Option
		}{
			{"single", single.Addr, nil},
			{"cluster", clusterURL(c), nil},
			{"cluster+ack", clusterURL(c), []lock.Option{ack}},
		} {
			b.Run("mode="+mode+"/server="+srv.name, func(b *testing.B) {
				l, err := lock.Open(context.Background(), srv.addr, modeOptions(mode, srv.opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				benchLockUnlock(b, l, "bench")
			})
		}
	}
}

// benchLockUnlock takes and releases key's lock b.N times, after one
// round that loads the scripts.
func benchLockUnlock(b *testing.B, l *lock.Locker, key string) {
	ctx := context.Background()
	lockUnlock := func() {
		ls, err := l.Lock(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	lockUnlock()
	b.ReportAllocs()
	for b.Loop() {
		lockUnlock()
	}
}

// BenchmarkClusterLockParallel is Lock and Unlock from 64 goroutines, each
// on a key of its own (64 keys, spread over the three primaries of a
// cluster), through one Locker, on a lone server and on a cluster, in the
// same run. Compare with
//
//	benchstat -col /server
func BenchmarkClusterLockParallel(b *testing.B) {
	single := redistest.Start(b)
	c := redistest.StartCluster(b, 3, 0)
	for _, srv := range []struct{ name, addr string }{{"single", single.Addr}, {"cluster", clusterURL(c)}} {
		b.Run("server="+srv.name, func(b *testing.B) {
			l, err := lock.Open(context.Background(), srv.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			lockParallel(b, l)
		})
	}
}
