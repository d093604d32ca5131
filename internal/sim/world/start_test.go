package world_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/world"
)

// A world that cannot start returns an error, having closed what it had started: before, the
// cleanup ran on the nil result and panicked (seen when a soak was stopped while a world started
// and its directory went away), so the caller never learned what failed.
func TestStartFailureReturnsTheError(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: notADir, TimeFactor: 0.002, S3: "file"})
	if err == nil {
		w.Close()
		t.Fatal("a world started in a directory that is a file")
	}
	if w != nil {
		t.Errorf("a failed start returned a world: %v", w)
	}
	t.Logf("start failed as it should: %v", err)
}
