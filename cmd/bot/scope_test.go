package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestReadCommandsStayInTheirRepository replays issue 11 hole 10: run by another repository's
// workflow (GITHUB_REPOSITORY), `bot status`, `bot cost` and `bot kubeconfig` refuse the cluster,
// as `bot down` does, and print nothing of it; from its own repository they work.
func TestReadCommandsStayInTheirRepository(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, kv := range w.Env() {
		t.Setenv(kv[0], kv[1])
	}
	store, err := statestore.Open(ctx, statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := provision.NewState("acme-shop-1", provision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(st)
	h := statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1, Phase: string(lifecycle.PhaseReady),
		Created: time.Now().UTC(), Expires: time.Now().UTC().Add(time.Hour)}
	if err := store.Put(ctx, &statestore.Document{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
	bot := func(repo string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		getenv := func(k string) string {
			if k == "GITHUB_REPOSITORY" {
				return repo
			}
			return os.Getenv(k)
		}
		err := newApp(&out, &errb, getenv).dispatch(ctx, args)
		return out.String(), err
	}
	for _, args := range [][]string{
		{"status", "--cluster", "acme-shop-1", "--health=false"},
		{"cost", "--cluster", "acme-shop-1"},
		{"kubeconfig", "--cluster", "acme-shop-1"},
		{"talosconfig", "--cluster", "acme-shop-1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, err := bot("acme/web", args...)
			if err == nil || !strings.Contains(err.Error(), "belongs to acme/shop") {
				t.Errorf("from acme/web: err %v, want a refusal naming acme/shop", err)
			}
			if out != "" {
				t.Errorf("from acme/web, printed:\n%s", out)
			}
			if args[0] == "status" || args[0] == "cost" {
				out, err := bot("acme/shop", args...)
				if err != nil || !strings.Contains(out, "acme-shop-1") {
					t.Errorf("from acme/shop: err %v, out:\n%s", err, out)
				}
			}
		})
	}
}
