package soak

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A seed is a history: the same decisions every time, and other seeds decide otherwise.
func TestGenerateIsAFunctionOfTheSeed(t *testing.T) {
	a, b := Generate(42, 200), Generate(42, 200)
	if !reflect.DeepEqual(a, b) || len(a) != 200 {
		t.Fatalf("seed 42 gave two histories (or not 200 events)")
	}
	if reflect.DeepEqual(a, Generate(43, 200)) {
		t.Fatal("seeds 42 and 43 gave the same history")
	}
	if !reflect.DeepEqual(WorldOf(42), WorldOf(42)) {
		t.Fatal("seed 42 gave two worlds")
	}
	kinds, kube := map[Kind]int{}, map[string]int{}
	var kills, async, faulty, bot, pauses, writtenBefore int
	all := Generate(7, 5000)
	for i, e := range all {
		kinds[e.Kind]++
		if e.Kind == KindKube {
			kube[e.Action]++
		}
		// A pause whose issue had an up of ada or wes is preceded by writes into its cluster.
		if e.Kind == KindComment && strings.HasPrefix(e.Body, "/poc pause") {
			if _, ok := lastUpOn(all[:i], e.Repo, e.Number); ok {
				pauses++
				if i >= 2 && all[i-2].Kind == KindKube && all[i-1].Kind == KindKube && all[i-1].Number == e.Number {
					writtenBefore++
				}
			}
		}
		if e.KillAfter > 0 {
			kills++
		}
		if e.Async {
			async++
		}
		if e.Faults != (Faults{}) {
			faulty++
		}
		if e.User == BotUser {
			bot++
		}
	}
	for _, k := range []Kind{KindComment, KindPR, KindSchedule, KindClock, KindWait, KindKube} {
		if kinds[k] == 0 {
			t.Errorf("5000 events hold no %s", k)
		}
	}
	for _, a := range []string{"configmaps", "secrets", kubeUpdate, kubeDelete} {
		if kube[a] == 0 {
			t.Errorf("5000 events: no %s of objects in a cluster (%v)", a, kube)
		}
	}
	if pauses == 0 || writtenBefore != pauses {
		t.Errorf("5000 events: %d pauses of a cluster someone could write to, %d preceded by writes", pauses, writtenBefore)
	}
	if kills == 0 || async == 0 || faulty == 0 || bot == 0 {
		t.Errorf("5000 events: %d kills, %d async, %d with faults, %d by the App", kills, async, faulty, bot)
	}
}

// The wire cuts a process at its kill point: that request and every later one get no answer at
// all, the kill is announced once, and what came before went through.
func TestWireKills(t *testing.T) {
	var served atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write([]byte("ok"))
	}))
	defer backend.Close()
	var kills atomic.Int64
	w := NewWire(1, Faults{}, 3, func() { kills.Add(1) })
	defer w.Close()
	front, gl := logged(t, w, GitHub, backend.URL)
	c := &http.Client{Timeout: 5 * time.Second}
	var answered []bool
	for range 5 {
		resp, err := c.Get(front + "/x")
		answered = append(answered, err == nil)
		if err == nil {
			resp.Body.Close()
		}
	}
	if !slices.Equal(answered, []bool{true, true, false, false, false}) {
		t.Errorf("answered %v, want the first two only", answered)
	}
	if served.Load() != 2 || kills.Load() != 1 || !w.Killed() {
		t.Errorf("served %d, kills %d, killed %v", served.Load(), kills.Load(), w.Killed())
	}
	// What the killed process asked for never reached GitHub: the log must not say it did.
	var effects []bool
	for _, r := range gl.requests() {
		effects = append(effects, r.tookEffect())
	}
	if !slices.Equal(effects, []bool{true, true, false, false, false}) {
		t.Errorf("logged as taking effect %v, want the first two only", effects)
	}
}

// Faults: a 503 never reaches the service; an after-effect 500 does (on mutating requests).
func TestWireFaults(t *testing.T) {
	var served atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	defer backend.Close()
	for _, tc := range []struct {
		name       string
		f          Faults
		svc        Service
		method     string
		wantStatus int
		wantServed int64
		wantEffect bool // what the GitHub log says of it: the service carried it out
	}{
		{"503 before the service", Faults{Rate5xx: 1}, Scaleway, "POST", 503, 0, false},
		{"429 before the service", Faults{Rate429: 1}, GitHub, "GET", 429, 0, false},
		{"took effect, then 500", Faults{AfterEffect: 1}, S3, "PUT", 500, 1, true},
		{"took effect on GitHub, then 500", Faults{AfterEffect: 1}, GitHub, "POST", 500, 1, true},
		{"no after-effect on a read", Faults{AfterEffect: 1}, Scaleway, "GET", 200, 1, true},
		{"GitHub refused it first", Faults{Rate5xx: 1}, GitHub, "POST", 503, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served.Store(0)
			w := NewWire(9, tc.f, 0, nil)
			defer w.Close()
			front, gl := logged(t, w, tc.svc, backend.URL)
			req, _ := http.NewRequest(tc.method, front+"/r", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || served.Load() != tc.wantServed {
				t.Errorf("status %d, served %d; want %d, %d", resp.StatusCode, served.Load(), tc.wantStatus, tc.wantServed)
			}
			if rs := gl.requests(); len(rs) != 1 || rs[0].Status != tc.wantStatus || rs[0].tookEffect() != tc.wantEffect {
				t.Errorf("logged %+v, want status %d and took effect %v", rs, tc.wantStatus, tc.wantEffect)
			}
		})
	}
}

// ddmin finds the two events that together fail, out of fifty.
func TestDdminFindsTheCulprits(t *testing.T) {
	fails := func(c []int) ([]Violation, bool) {
		return []Violation{{Invariant: "x"}}, slices.Contains(c, 17) && slices.Contains(c, 33)
	}
	keep, _ := ddmin(50, nil, 200, fails)
	if !slices.Equal(keep, []int{17, 33}) {
		t.Fatalf("shrunk to %v, want [17 33]", keep)
	}
}

// A process still running at the step timeout (a job's timeout) is a hang, reported with the
// end of what it printed; one that ended is not.
func TestRunsEndBeforeTheirTimeout(t *testing.T) {
	c := &checker{stepTimeout: 2 * time.Minute, checked: map[*proc]bool{}}
	out := "step 1\nwait for delete server 42: stopping\n"
	for _, tc := range []struct {
		timedOut bool
		want     int
	}{{false, 0}, {true, 1}} {
		p := &proc{event: Event{Kind: KindSchedule, Repo: "acme/a"}, timedOut: tc.timedOut, result: Process{Output: out}}
		vs := c.checkProcess(-1, p)
		if len(vs) != tc.want {
			t.Fatalf("timed out %v: %v, want %d violations", tc.timedOut, vs, tc.want)
		}
		if tc.want > 0 && (vs[0].Invariant != "every run ends before its job's timeout" || !strings.Contains(vs[0].Detail, "wait for delete server 42")) {
			t.Errorf("violation %+v: want the hang, with the process's last lines", vs[0])
		}
	}
}

// An answer the process has read is in the GitHub log by then. go-github decodes the JSON object
// and closes the body without waiting for the end of a chunked answer (the GitHub stand-in's
// answers over 2 KiB, a comment holding the help text), so a process could end, and be checked,
// while the wire's handler still waited for that end and had not logged the comment it created:
// seed 740728985280613183 ("/poc help" re-run: "no comment created or edited" though its POST
// took effect).
func TestWireLogsWhatTheProcessRead(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	big := strings.Repeat("x", 8<<10)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": 1, "body": big})
		w.(http.Flusher).Flush()
		// The end of the chunked answer comes later: the client does not need it.
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer backend.Close()
	w := NewWire(1, Faults{}, 0, nil)
	defer w.Close()
	front, gl := logged(t, w, GitHub, backend.URL)
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post(front+"/repos/acme/a/issues/3/comments", "application/json", strings.NewReader(`{"body":"help"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ ID int64 }
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.ID != 1 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	rs := gl.requests()
	if len(rs) != 1 || rs[0].Method != "POST" || rs[0].Status != http.StatusCreated || !rs[0].tookEffect() {
		t.Fatalf("logged %+v once the process had read the answer, want the POST with status and effect 201", rs)
	}
}

// logged fronts backend with w for svc: the front's URL, and the log of what reached GitHub.
func logged(t *testing.T, w *Wire, svc Service, backend string) (string, *ghLog) {
	t.Helper()
	gl := &ghLog{}
	front, err := w.frontLogged(svc, backend, gl)
	if err != nil {
		t.Fatal(err)
	}
	return front, gl
}

// The bots' clock starts at the history's time of day whenever the soak runs, and the seeds
// split between acme/b's pause window and the day.
func TestHistoryClockStartsAtItsTimeOfDay(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		now  string
		at   time.Duration
		want time.Duration
	}{
		{"2026-12-02T05:00:00Z", 21 * time.Hour, 16 * time.Hour},
		{"2026-12-02T22:30:00Z", 21 * time.Hour, 22*time.Hour + 30*time.Minute},
		{"2026-12-02T21:00:00Z", 21 * time.Hour, 0},
		{"2026-12-02T03:00:00+02:00", 2 * time.Hour, 1 * time.Hour},
	} {
		if got := clockOffset(at(tc.now), tc.at); got != tc.want {
			t.Errorf("clockOffset(%s, %s) = %s, want %s", tc.now, tc.at, got, tc.want)
		}
	}
	inside := 0
	for seed := range uint64(200) {
		c := WorldOf(seed).Clock
		if c < 0 || c >= 24*time.Hour {
			t.Fatalf("seed %d starts at %s, not a time of day", seed, c)
		}
		if c >= 20*time.Hour || c < 6*time.Hour {
			inside++
		} else if c < 8*time.Hour || c >= 18*time.Hour {
			t.Errorf("seed %d starts at %s, less than two hours from the window's edge", seed, c)
		}
	}
	if inside < 60 || inside > 140 {
		t.Errorf("%d of 200 seeds start inside the pause window, want about half", inside)
	}
}
