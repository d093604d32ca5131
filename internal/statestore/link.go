package statestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrDeadLink: a freshly signed URL does not serve its object (see *DeadLinkError).
var ErrDeadLink = errors.New("the signed link does not work")

// DeadLinkError says how a fresh signed URL failed its check, and what to fix.
type DeadLinkError struct {
	Key    string // public/… object the link is for
	Status string // the HTTP status it answered ("403 Forbidden"), or "" when it could not be fetched
	Err    error  // the transport error when Status is ""
	Fix    string // what the operator should change
}

func (e *DeadLinkError) Error() string {
	what := e.Status
	if what == "" {
		what = fmt.Sprintf("no answer (%v)", e.Err)
	}
	return fmt.Sprintf("the signed link to %s answered %s to a ranged GET: %s", e.Key, what, e.Fix)
}

// Is makes errors.Is(err, ErrDeadLink) true.
func (e *DeadLinkError) Is(target error) bool { return target == ErrDeadLink }

// linkCheckTimeout bounds the check of one fresh link.
const linkCheckTimeout = 15 * time.Second

// checkLink fetches the first byte of u through the link itself, with no credentials but the
// signature: signing is local and proves nothing, the bucket decides (Scaleway grants what IAM and
// the bucket policy both allow: combining-iam-and-object-storage.mdx).
func (s *Store) checkLink(ctx context.Context, key, u string) error {
	ctx, cancel := context.WithTimeout(ctx, linkCheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &DeadLinkError{Key: key, Err: err, Fix: "the signed URL does not parse; report this as a pocbot bug"}
	}
	req.Header.Set("Range", "bytes=0-0")
	resp, err := s.linkClient.Do(req)
	if err != nil {
		return &DeadLinkError{Key: key, Err: err, Fix: "the bucket's endpoint cannot be reached from the bot: check the endpoint in " + EnvStateURL}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
		return nil
	case http.StatusForbidden:
		return &DeadLinkError{Key: key, Status: resp.Status, Fix: "the key that signs links may not read public/ objects: " +
			"on Scaleway it needs an IAM policy granting ObjectStorageObjectsRead on the project AND, when the bucket has a policy, " +
			"a statement allowing it s3:GetObject on STATE-BUCKET/public/* (docs/install.md, \"Presigning key\")"}
	default:
		return &DeadLinkError{Key: key, Status: resp.Status, Fix: "the bucket refused the link: check " + EnvStateURL +
			" (endpoint, region) and the presigning key (docs/install.md, \"Presigning key\")"}
	}
}

func isHTTPURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}
