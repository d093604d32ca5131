package statestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	simclock "github.com/pocbot/pocbot/internal/sim/clock"
)

func TestLockGoroutineRace(t *testing.T) {
	t.Parallel()
	const racers = 8
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			ctx := testCtx(t)
			key := newKey(t)
			var (
				wg             sync.WaitGroup
				mu             sync.Mutex
				winners        []string
				lockedMessages []string
			)
			start := make(chan struct{})
			for i := 0; i < racers; i++ {
				s := w.open(t, key) // one store per racer: nothing shared but the bucket
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					l, err := s.Lock(ctx, "c", LockInfo{Actor: fmt.Sprintf("racer-%d", i), RunID: strconv.Itoa(i), Command: "up"}, time.Minute)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						winners = append(winners, l.Info().Actor)
					case errors.Is(err, ErrLocked):
						lockedMessages = append(lockedMessages, err.Error())
					default:
						t.Errorf("racer %d: %v", i, err)
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(winners) != 1 || len(lockedMessages) != racers-1 {
				t.Fatalf("winners %v, %d locked out; want exactly one winner", winners, len(lockedMessages))
			}
			for _, m := range lockedMessages {
				if !strings.Contains(m, winners[0]) || !strings.Contains(m, `command "up"`) || !strings.Contains(m, "since ") {
					t.Fatalf("busy-lock message does not name the holder %s: %s", winners[0], m)
				}
			}
		})
	}
}

// TestHelperProcess is not a test: it is the child of TestLockProcessRace and
// TestFileWriterDiesMidWrite, selected by POCBOT_STATESTORE_HELPER.
func TestHelperProcess(t *testing.T) {
	t.Parallel()
	mode := os.Getenv("POCBOT_STATESTORE_HELPER")
	if mode == "" {
		t.Skip("helper process for other tests (POCBOT_STATESTORE_HELPER unset)")
	}
	ctx := testCtx(t)
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	switch mode {
	case "lock":
		at, _ := strconv.ParseInt(os.Getenv("POCBOT_START_AT"), 10, 64)
		time.Sleep(time.Until(time.Unix(0, at)))
		_, err := s.Lock(ctx, "c", LockInfo{Actor: "pid-" + strconv.Itoa(os.Getpid()), Command: "up"}, time.Minute)
		switch {
		case err == nil:
			fmt.Println("WON")
		case errors.Is(err, ErrLocked):
			fmt.Println("LOCKED", err)
		default:
			fmt.Println("ERROR", err)
		}
	case "die-mid-write":
		doc, err := s.Get(ctx, "c")
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(3)
		}
		fileWriteHook = func(int) { os.Exit(7) } // the process dies with half a temp file written
		doc.Body = make([]byte, 256<<10)
		err = s.Put(ctx, doc)
		fmt.Println("ERROR Put returned", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helperCmd(t *testing.T, w *world, key, mode string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cfg := w.cfg(key)
	cmd.Env = append(os.Environ(), "POCBOT_STATESTORE_HELPER="+mode, EnvStateURL+"="+cfg.StateURL, EnvStateKey+"="+cfg.KeyURL)
	cmd.Env = append(append(cmd.Env, w.env...), extra...)
	return cmd
}

func TestLockProcessRace(t *testing.T) {
	t.Parallel()
	const procs = 4
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			key := newKey(t)
			// All children call Lock at the same instant, after their (slow) start-up.
			at := time.Now().Add(3 * time.Second).UnixNano()
			outs := make([]string, procs)
			var wg sync.WaitGroup
			for i := 0; i < procs; i++ {
				cmd := helperCmd(t, w, key, "lock", "POCBOT_START_AT="+strconv.FormatInt(at, 10))
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Errorf("child %d: %v\n%s", i, err, out)
					}
					outs[i] = string(out)
				}()
			}
			wg.Wait()
			won, locked := 0, 0
			for i, o := range outs {
				switch {
				case strings.Contains(o, "WON"):
					won++
				case strings.Contains(o, "LOCKED cluster \"c\" is locked by pid-"):
					locked++
				default:
					t.Errorf("child %d said: %s", i, o)
				}
			}
			if won != 1 || locked != procs-1 {
				t.Fatalf("%d processes won, %d were locked out; want exactly one winner", won, locked)
			}
		})
	}
}

func TestLeaseExpiryTakeover(t *testing.T) {
	t.Parallel()
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			ctx := testCtx(t)
			key := newKey(t)
			clock := simclock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			a, b := w.open(t, key, WithClock(clock.Now)), w.open(t, key, WithClock(clock.Now))
			la, err := a.Lock(ctx, "c", LockInfo{Actor: "alice", RunID: "101", Command: "up"}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(50 * time.Second)
			if err := la.Renew(ctx); err != nil { // lease now ends at 12:01:50
				t.Fatal(err)
			}
			clock.Advance(50 * time.Second)
			_, err = b.Lock(ctx, "c", LockInfo{Actor: "bob", RunID: "202", Command: "down"}, time.Minute)
			var le *LockedError
			if !errors.As(err, &le) || le.Holder.Actor != "alice" || !le.Holder.Expires.Equal(clock.Now().Add(10*time.Second)) {
				t.Fatalf("Lock during a renewed lease: %v", err)
			}
			clock.Advance(11 * time.Second) // alice's run died: no renew
			lb, err := b.Lock(ctx, "c", LockInfo{Actor: "bob", RunID: "202", Command: "down"}, time.Minute)
			if err != nil {
				t.Fatalf("takeover of an expired lease: %v", err)
			}
			info, err := a.ReadLock(ctx, "c")
			if err != nil || info == nil || info.Actor != "bob" || info.ID != lb.Info().ID {
				t.Fatalf("ReadLock after takeover: %+v %v", info, err)
			}
			if err := la.Renew(ctx); !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), "bob") {
				t.Fatalf("Renew of a lock taken over: %v, want ErrLockLost naming bob", err)
			}
			if err := la.Release(ctx); err != nil {
				t.Fatalf("Release after the loss was reported: %v", err)
			}
			if info, _ := a.ReadLock(ctx, "c"); info == nil || info.Actor != "bob" {
				t.Fatalf("alice's release removed bob's lock: %+v", info)
			}
			if err := lb.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if info, err := a.ReadLock(ctx, "c"); info != nil || err != nil {
				t.Fatalf("ReadLock after release: %+v %v", info, err)
			}
		})
	}
}

func TestReleaseAfterTakeoverKeepsNewHolder(t *testing.T) {
	t.Parallel()
	w := fileWorld(t)
	ctx := testCtx(t)
	clock := simclock.NewManual(time.Unix(1e9, 0))
	s := w.open(t, newKey(t), WithClock(clock.Now))
	la, err := s.Lock(ctx, "c", LockInfo{Actor: "alice"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, err := s.Lock(ctx, "c", LockInfo{Actor: "bob"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Release of a lock taken over: %v, want ErrLockLost", err)
	}
	if info, _ := s.ReadLock(ctx, "c"); info == nil || info.Actor != "bob" {
		t.Fatalf("bob's lock is gone: %+v", info)
	}
}

func TestForceUnlockAndWait(t *testing.T) {
	t.Parallel()
	inWorlds(t, func(t *testing.T, ctx context.Context, w *world, key string, s *Store) {
		l, err := s.Lock(ctx, "c", LockInfo{Actor: "alice", RunID: "77", Command: "up"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		id := l.Info().ID
		if err := s.ForceUnlock(ctx, "c", "not-the-id"); err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "alice") {
			t.Fatalf("ForceUnlock with a wrong id: %v, want an error naming %s and alice", err, id)
		}
		if err := s.ForceUnlock(ctx, "c", id); err != nil {
			t.Fatal(err)
		}
		if err := s.ForceUnlock(ctx, "c", id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second ForceUnlock: %v", err)
		}
		if err := l.Renew(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Renew after a forced unlock: %v", err)
		}

		// WaitLock gets the lock when the holder releases it, and gives up with the holder's
		// name when it does not.
		held, err := s.Lock(ctx, "c", LockInfo{Actor: "carol", Command: "down"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := s.WaitLock(ctx, "c", LockInfo{Actor: "dave"}, time.Minute, 300*time.Millisecond); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "carol") {
			t.Fatalf("WaitLock on a held lock: %v", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("WaitLock waited %s for a 300ms wait", el)
		}
		go func() {
			time.Sleep(200 * time.Millisecond)
			held.Release(ctx)
		}()
		l2, err := s.WaitLock(ctx, "c", LockInfo{Actor: "dave"}, time.Minute, 10*time.Second)
		if err != nil || l2.Info().Actor != "dave" {
			t.Fatalf("WaitLock after release: %v", err)
		}
	})
}
