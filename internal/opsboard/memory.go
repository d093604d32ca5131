package opsboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/statestore"
)

// Issues is what the board needs of GitHub (internal/github.Client).
type Issues interface {
	// OwnIssue reads issue number: ok when it is the App's own and carries marker.
	OwnIssue(ctx context.Context, number int, marker string) (body string, ok bool, err error)
	// FindBoardIssue searches the App's own open issue titled title with marker (search lags).
	FindBoardIssue(ctx context.Context, title, marker string) (number int, body string, found bool, err error)
	CreateIssue(ctx context.Context, title, body string) (int, error)
	EditIssueBody(ctx context.Context, number int, body string) error
}

// Memory keeps the board's issue number and the lock under which the board is created.
type Memory interface {
	// Number is the board's issue number (0: none remembered).
	Number(ctx context.Context) (int, error)
	// Remember records the board's issue number.
	Remember(ctx context.Context, number int) error
	// Lock takes the board's creation lock, waiting for it a while; release gives it back.
	Lock(ctx context.Context) (release func(), err error)
}

// Lock bounds: the creation is a search and one issue; a run that finds the lock held waits for
// the holder to finish and then reads the number it recorded.
const (
	lockLease = 2 * time.Minute
	lockWait  = time.Minute
)

// storeMemory is Memory in the state bucket.
type storeMemory struct {
	store      *statestore.Store
	repository string
	holder     statestore.LockInfo
}

// StoreMemory keeps the board of repository (OWNER/REPO) in the state bucket: its number in the
// shared document DocName(repository), its creation under the LockBoard lock named by the
// repository; holder says who takes the lock (run id, command).
func StoreMemory(store *statestore.Store, repository string, holder statestore.LockInfo) Memory {
	return &storeMemory{store: store, repository: repository, holder: holder}
}

// DocName is the shared document that keeps repository's board number (GitHub names are
// case-insensitive: the digest is of the lower-cased name).
func DocName(repository string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(repository)))
	return "board-" + hex.EncodeToString(sum[:8])
}

type boardDoc struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
}

func (m *storeMemory) Number(ctx context.Context) (int, error) {
	doc, err := m.store.GetShared(ctx, DocName(m.repository))
	if errors.Is(err, statestore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the board's number: %w", err)
	}
	var d boardDoc
	if err := json.Unmarshal(doc.Body, &d); err != nil || !strings.EqualFold(d.Repository, m.repository) {
		return 0, nil // unreadable, or another repository's (a digest collision): start over
	}
	return d.Number, nil
}

func (m *storeMemory) Remember(ctx context.Context, number int) error {
	body, err := json.Marshal(boardDoc{Repository: m.repository, Number: number})
	if err != nil {
		return err
	}
	for range 5 {
		doc, err := m.store.GetShared(ctx, DocName(m.repository))
		if errors.Is(err, statestore.ErrNotFound) {
			doc, err = &statestore.Shared{Name: DocName(m.repository)}, nil
		}
		if err != nil {
			return fmt.Errorf("remember the board's number: %w", err)
		}
		doc.Body = body
		if err = m.store.PutShared(ctx, doc); !errors.Is(err, statestore.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("remember the board's number: the document kept changing")
}

func (m *storeMemory) Lock(ctx context.Context) (func(), error) {
	held, err := m.store.Hold(ctx, statestore.DigestLock(statestore.LockBoard, strings.ToLower(m.repository)), m.holder, lockLease,
		statestore.WaitUpTo(lockWait))
	if err != nil {
		return nil, fmt.Errorf("take the board's lock: %w", err)
	}
	return func() { _ = held.Release(context.WithoutCancel(ctx)) }, nil
}

// Update rewrites the board issue (creating it the first time) and returns its number. The
// board is the issue whose number mem remembers, when the App opened it; else, under the lock,
// the one another run made meanwhile, or one of an earlier version found by search (the App's
// own only); else a new one, remembered at once.
func Update(ctx context.Context, gh Issues, mem Memory, live []Entry, orphans []Orphan, now time.Time) (int, error) {
	n, body, err := find(ctx, gh, mem, false)
	if err != nil {
		return 0, fmt.Errorf("operator board: %w", err)
	}
	if n == 0 {
		release, err := mem.Lock(ctx)
		if err != nil {
			return 0, fmt.Errorf("operator board: %w", err)
		}
		defer release()
		if n, body, err = find(ctx, gh, mem, true); err != nil {
			return 0, fmt.Errorf("operator board: %w", err)
		}
	}
	next := Render(Merge(ParseHistory(body), live, now), orphans, now)
	if n == 0 {
		if n, err = gh.CreateIssue(ctx, Title, next); err != nil {
			return 0, fmt.Errorf("operator board: %w", err)
		}
		if err := mem.Remember(ctx, n); err != nil {
			return n, fmt.Errorf("operator board: created #%d but %w (the next run finds it by search)", n, err)
		}
		return n, nil
	}
	if next == body {
		return n, nil
	}
	if err := gh.EditIssueBody(ctx, n, next); err != nil {
		return 0, fmt.Errorf("operator board: %w", err)
	}
	return n, nil
}

// find is the board: the remembered issue when it is the App's own; with search, else the App's
// own found by search (then remembered). 0 when there is none.
func find(ctx context.Context, gh Issues, mem Memory, search bool) (int, string, error) {
	n, err := mem.Number(ctx)
	if err != nil {
		return 0, "", err
	}
	if n > 0 {
		body, ok, err := gh.OwnIssue(ctx, n, marker)
		if err != nil || ok {
			return n, body, err
		}
	}
	if !search {
		return 0, "", nil
	}
	found, body, ok, err := gh.FindBoardIssue(ctx, Title, marker)
	if err != nil || !ok {
		return 0, "", err
	}
	if err := mem.Remember(ctx, found); err != nil {
		return 0, "", err
	}
	return found, body, nil
}
