package clusterops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/statestore"
)

// holdPool takes the repository's pool lock for a pass, trying once: a pass reads the spares,
// decides and starts its builds, whose first documents a concurrent pass would not see yet, so
// two passes at once (the schedule's and an operator's `bot pool fill`, or two scheduled runs:
// the workflow has no concurrency group) would each build the pool. A busy lock is another pass
// at work: held is nil and busy says who holds it (the pass then does nothing; the next one finds
// what the holder built). The lock is held until the pass's steps have ended.
func (o *Ops) holdPool(ctx context.Context, req PoolRequest) (held *statestore.Held, busy string, err error) {
	key := statestore.DigestLock(statestore.LockPool, strings.ToLower(req.Repository))
	held, err = o.acquire(ctx, key, Intent{RunID: req.RunID, RequestedBy: req.RequestedBy, Command: "pool pass"}, time.Millisecond)
	var le *statestore.LockedError
	switch {
	case err == nil:
		return held, "", nil
	case errors.As(err, &le):
		return nil, fmt.Sprintf("another pool pass is at work (%s, run %s, since %s): it keeps the pool; this one does nothing",
			le.Holder.Actor, le.Holder.RunID, le.Holder.Since.UTC().Format(time.RFC3339)), nil
	}
	return nil, "", fmt.Errorf("pool pass: take the pool's lock: %w", err)
}
