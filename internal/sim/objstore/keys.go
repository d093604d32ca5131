package objstore

import (
	"context"
	"fmt"
)

// KeyResolver tells what an access key the Server was not given (AddUser, AddProjectKey) is: its
// secret key and what its IAM policy grants on Object Storage, in the project of the Server's
// buckets. ok is false for a key that does not exist (or no longer does).
type KeyResolver func(accessKey string) (secretKey string, a Access, ok bool)

// ResolveKeys makes the server accept the keys f knows, as Scaleway Object Storage accepts every
// IAM API key of the organization, subject to its policy: at a key's first request the stand-in
// makes its versitygw account, and at every request it asks f again, so a policy changed or a key
// deleted in IAM takes effect at once. A key f does not know is refused with InvalidAccessKeyId.
// The account has versitygw's admin role: it reaches every bucket, as IAM lets a key reach its
// project's buckets when they have no bucket policy, and the proxy narrows it to what f grants
// (AccessObjectsRead: GET and HEAD). A bucket policy does not narrow it further (versitygw does not
// apply one to an admin; Scaleway would): keys that a bucket policy must restrict are given with
// AddUser. Keys given by AddUser or AddProjectKey keep what GrantIAM says.
func (s *Server) ResolveKeys(f KeyResolver) {
	s.dialect.mu.Lock()
	defer s.dialect.mu.Unlock()
	s.dialect.resolve = f
}

// known records that the versitygw account of access exists with role, and that its access is
// GrantIAM's (none until granted).
func (d *dialect) known(access, role string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.iam[access]; !ok {
		d.iam[access] = AccessNone
	}
	d.roles[access] = role
}

// access is what the IAM policy of an access key grants; known is false for a key neither given
// nor resolved. Without a resolver every key is known (ungranted keys have AccessNone).
func (d *dialect) access(ctx context.Context, ak string) (a Access, known bool, err error) {
	d.mu.Lock()
	a, given := d.iam[ak]
	resolve := d.resolve
	d.mu.Unlock()
	if given || resolve == nil {
		return a, true, nil
	}
	secret, a, ok := resolve(ak)
	if !ok {
		return AccessNone, false, nil
	}
	d.regMu.Lock()
	defer d.regMu.Unlock()
	d.mu.Lock()
	_, exists := d.roles[ak]
	d.mu.Unlock()
	if !exists {
		if err := d.account(ctx, "create-user", "--access", ak, "--secret", secret, "--role", "admin"); err != nil {
			return AccessNone, true, fmt.Errorf("account of the IAM key %s: %w", ak, err)
		}
		d.mu.Lock()
		d.roles[ak] = "admin"
		d.mu.Unlock()
	}
	return a, true, nil
}
