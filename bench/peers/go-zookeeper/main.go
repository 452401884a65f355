// The go-zookeeper peer of the lock benchmark contract (docs/benchmarks.md, "Method"):
// github.com/samuel/go-zookeeper zk.Lock (Debian's 2018-01-30 snapshot). A client is a
// goroutine with its own *zk.Conn. The library has no read-write lock: rw is unsupported.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

var (
	zkAddr     = flag.String("zk", "", "HOST:PORT")
	scenario   = flag.String("scenario", "", "uncontended, contended, many-locks or rw")
	clients    = flag.Int("clients", 1, "clients, each with its own session")
	iterations = flag.Int64("iterations", 0, "measured ops")
	locks      = flag.Int("locks", 100, "locks in many-locks")
)

const stallLimit = 60 * time.Second

var clock = time.Now() // durations from it use Go's monotonic clock

func now() int64 { return int64(time.Since(clock)) }

func cpuNanos() int64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return u.Utime.Nano() + u.Stime.Nano()
}

func percentileUs(ns []int64, p float64) float64 {
	if len(ns) == 0 {
		return 0
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	return float64(s[rank-1]) / 1000
}

func connect() *zk.Conn {
	conn, events, err := zk.Connect([]string{*zkAddr}, 30*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		fail(err.Error())
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	go func() {
		for range events {
		}
	}()
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...interface{}) {}

func emit(v map[string]interface{}) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "go-zookeeper:", msg)
	emit(map[string]interface{}{"impl": "go-zookeeper", "scenario": *scenario, "error": msg})
	os.Exit(1)
}

// A deadlock must fail the run rather than wait for the harness (contract §1).
var lastProgress int64

func watchdog() {
	atomic.StoreInt64(&lastProgress, now())
	for range time.Tick(time.Second) {
		if time.Duration(now()-atomic.LoadInt64(&lastProgress)) > stallLimit {
			fail("stalled")
		}
	}
}

type op struct {
	call, got, released, end int64
	client                   int
}

func tickets(l *zk.Lock, next *int64, count int64, client int, out *[]op) {
	for atomic.AddInt64(next, 1)-1 < count {
		call := now()
		if err := l.Lock(); err != nil {
			fail(err.Error())
		}
		got := now()
		releasing := now()
		if err := l.Unlock(); err != nil {
			fail(err.Error())
		}
		if out != nil {
			*out = append(*out, op{call, got, releasing, now(), client})
		}
		atomic.StoreInt64(&lastProgress, now())
	}
}

func contention(base string) map[string]interface{} {
	n := *clients
	if *scenario == "uncontended" {
		n = 1
	}
	warmup := (*iterations + 9) / 10
	var setup, warmed sync.WaitGroup
	setup.Add(n)
	warmed.Add(n)
	start := make(chan struct{})
	begin := make(chan struct{})
	var warmTicket, ticket int64
	records := make([][]op, n)
	finished := make([]int64, n)
	var done sync.WaitGroup
	done.Add(n)
	for c := 0; c < n; c++ {
		go func(c int) {
			conn := connect()
			acl := zk.WorldACL(zk.PermAll)
			warm, lock := zk.NewLock(conn, base+"/warm", acl), zk.NewLock(conn, base+"/lock", acl)
			setup.Done()
			<-begin
			tickets(warm, &warmTicket, warmup, c, nil)
			warmed.Done()
			<-start
			tickets(lock, &ticket, *iterations, c, &records[c])
			finished[c] = now()
			done.Done()
		}(c)
	}
	setup.Wait()
	close(begin)
	warmed.Wait()
	cpu0, t0 := cpuNanos(), now()
	close(start)
	done.Wait()
	cpu := cpuNanos() - cpu0
	end := int64(0)
	var ops []op
	for c := range records {
		ops = append(ops, records[c]...)
		if finished[c] > end {
			end = finished[c]
		}
	}
	elapsed := float64(end-t0) / 1e9
	out := map[string]interface{}{"impl": "go-zookeeper", "scenario": *scenario, "clients": n,
		"iterations": *iterations, "warmup": warmup, "elapsed_s": elapsed,
		"ops_per_s": float64(*iterations) / elapsed, "async_release": false, "goroutines": n,
		"cpu_us_per_op": float64(cpu) / 1000 / float64(*iterations)}
	var samples []int64
	for _, o := range ops {
		if *scenario == "uncontended" {
			samples = append(samples, o.end-o.call)
		} else {
			samples = append(samples, o.got-o.call)
		}
	}
	out["p50_us"], out["p99_us"] = percentileUs(samples, 50), percentileUs(samples, 99)
	if *scenario == "contended" {
		sort.Slice(ops, func(i, j int) bool { return ops[i].got < ops[j].got })
		perClient := make([]int, n)
		var handoff []int64
		violations, latestEnd := 0, int64(math.MinInt64)
		for i, o := range ops {
			perClient[o.client]++
			if i > 0 {
				handoff = append(handoff, o.got-ops[i-1].released)
			}
			if o.got < latestEnd || (i+1 < len(ops) && ops[i+1].got < o.released) {
				violations++
			}
			if o.released > latestEnd {
				latestEnd = o.released
			}
		}
		sort.Ints(perClient)
		out["handoff_p50_us"], out["handoff_p99_us"] = percentileUs(handoff, 50), percentileUs(handoff, 99)
		out["per_client_min"], out["per_client_max"] = perClient[0], perClient[n-1]
		out["violations"] = violations
	}
	return out
}

func manyLocks(base string) map[string]interface{} {
	m := *locks
	rounds := (*iterations + int64(m) - 1) / int64(m)
	warmRounds := ((*iterations+9)/10 + int64(m) - 1) / int64(m)
	conn := connect()
	acl := zk.WorldACL(zk.PermAll)
	warm, measured := make([]*zk.Lock, m), make([]*zk.Lock, m)
	for i := 0; i < m; i++ {
		warm[i] = zk.NewLock(conn, fmt.Sprintf("%s/warm/lock-%d", base, i), acl)
		measured[i] = zk.NewLock(conn, fmt.Sprintf("%s/lock/lock-%d", base, i), acl)
	}
	// One round: M goroutines take one lock each; all are held when the WaitGroup is done.
	round := func(set []*zk.Lock) {
		var held sync.WaitGroup
		held.Add(m)
		for _, l := range set {
			go func(l *zk.Lock) {
				if err := l.Lock(); err != nil {
					fail(err.Error())
				}
				held.Done()
			}(l)
		}
		held.Wait()
		var released sync.WaitGroup
		released.Add(m)
		for _, l := range set {
			go func(l *zk.Lock) { l.Unlock(); released.Done() }(l)
		}
		released.Wait()
		atomic.StoreInt64(&lastProgress, now())
	}
	for r := int64(0); r < warmRounds; r++ {
		round(warm)
	}
	var times []int64
	total := int64(0)
	cpu0 := cpuNanos()
	for r := int64(0); r < rounds; r++ {
		t := now()
		round(measured)
		times = append(times, now()-t)
		total += now() - t
	}
	cpu := cpuNanos() - cpu0
	n := rounds * int64(m)
	return map[string]interface{}{"impl": "go-zookeeper", "scenario": "many-locks", "clients": 1,
		"iterations": n, "warmup": warmRounds * int64(m), "locks": m, "elapsed_s": float64(total) / 1e9,
		"ops_per_s": float64(n) / (float64(total) / 1e9), "p50_us": percentileUs(times, 50),
		"p99_us": percentileUs(times, 99), "async_release": false, "goroutines": m,
		"cpu_us_per_op": float64(cpu) / 1000 / float64(n)}
}

func main() {
	flag.Parse()
	log.SetOutput(os.Stderr)
	if *zkAddr == "" || *iterations < 1 {
		fmt.Fprintln(os.Stderr, "usage: --zk HOST:PORT --scenario NAME --iterations K [--clients N] [--locks M]")
		os.Exit(2)
	}
	base := fmt.Sprintf("/bench/go-zookeeper/%s-%d-%d", *scenario, os.Getpid(), rand.New(rand.NewSource(time.Now().UnixNano())).Intn(1e9))
	go watchdog()
	switch *scenario {
	case "uncontended", "contended":
		emit(contention(base))
	case "many-locks":
		emit(manyLocks(base))
	default:
		emit(map[string]interface{}{"impl": "go-zookeeper", "scenario": *scenario, "unsupported": true})
		os.Exit(3)
	}
}
