package poolstore_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/statestore"
)

// stores opens n stores on one file bucket, as n bot processes would.
func stores(t *testing.T, n int) []*statestore.Store {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := statestore.Config{StateURL: "file://" + t.TempDir(), KeyURL: "base64key://" + base64.URLEncoding.EncodeToString(key)}
	var out []*statestore.Store
	for range n {
		s, err := statestore.Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

var want = pool.Want{Zone: "fr-par-1", Offer: "EM-A115X-SSD", TalosVersion: "v1.13.11", Schematic: "abc",
	ImageURL: "https://factory.example/metal.raw.zst", Scope: pool.Scope{Repository: "acme/shop"}}

// worker is a parked worker want matches until until, its disk re-imaged when it was parked.
func worker(id string, until time.Time) pool.Worker {
	at := until.Add(-2 * time.Hour)
	return pool.Worker{ServerID: id, IP: "127.0.0.9", Zone: want.Zone, Offer: want.Offer, TalosVersion: want.TalosVersion,
		Schematic: want.Schematic, Disk: "/dev/sda", ParkedUntil: until, ParkedAt: at, ParkedFrom: "old", Repository: "acme/shop",
		Reimage: &pool.Reimage{ImageURL: want.ImageURL, SHA256: strings.Repeat("0", 64), Bytes: 1, Disk: "/dev/sda", At: at}}
}

// Two ups of two processes race for the only parked worker: exactly one gets it, the other is
// told there is none (and would provision cold).
func TestTwoUpsRaceForOneWorker(t *testing.T) {
	ctx := t.Context()
	for round := range 5 {
		ss := stores(t, 2)
		a, b := &poolstore.Pool{Store: ss[0]}, &poolstore.Pool{Store: ss[1]}
		if err := a.Park(ctx, worker("srv-1", time.Now().Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		res := make([]error, 2)
		got := make([]pool.Worker, 2)
		start := make(chan struct{})
		for i, p := range []*poolstore.Pool{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], res[i] = p.Claim(ctx, []string{"up-a", "up-b"}[i], want)
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for i := range 2 {
			switch {
			case res[i] == nil:
				wins++
				if got[i].ServerID != "srv-1" {
					t.Fatalf("round %d: claim %d got %q", round, i, got[i].ServerID)
				}
			case !errors.Is(res[i], pool.ErrNone):
				t.Fatalf("round %d: claim %d: %v", round, i, res[i])
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d claims won the one parked worker (errors %v)", round, wins, res)
		}
		d, err := a.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := d.Find("srv-1"); w.ClaimedBy == "" {
			t.Fatalf("round %d: the winner's claim is not recorded: %+v", round, w)
		}
	}
}

func TestClaimMatchesAndExpires(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := &poolstore.Pool{Store: stores(t, 1)[0], Now: func() time.Time { return now }}
	other := worker("srv-other", now.Add(time.Hour))
	other.TalosVersion = "v1.12.0"
	for _, w := range []pool.Worker{other, worker("srv-old", now.Add(-time.Minute)), worker("srv-ok", now.Add(time.Hour))} {
		if err := p.Park(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.Claim(ctx, "c1", want)
	if err != nil || got.ServerID != "srv-ok" {
		t.Fatalf("claim = %q, %v; want srv-ok (the other is another Talos version, the old one expired)", got.ServerID, err)
	}
	if _, err := p.Claim(ctx, "c2", want); !errors.Is(err, pool.ErrNone) {
		t.Fatalf("second claim: %v, want ErrNone", err)
	}
	d, _ := p.List(ctx)
	exp := d.Expired(now)
	if len(exp) != 1 || exp[0].ServerID != "srv-old" {
		t.Fatalf("expired = %+v, want srv-old only", exp)
	}
}
