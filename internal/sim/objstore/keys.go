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
// makes its versitygw account (role admin for AccessFull, which reaches every bucket; role user
// otherwise, which a bucket policy must grant), and at every request it asks f again, so a policy
// changed or a key deleted in IAM takes effect at once. A key f does not know is refused with
// InvalidAccessKeyId. Keys given by AddUser or AddProjectKey keep what GrantIAM says.
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
	role := "user"
	if a == AccessFull {
		role = "admin"
	}
	d.regMu.Lock()
	defer d.regMu.Unlock()
	d.mu.Lock()
	had, exists := d.roles[ak]
	d.mu.Unlock()
	switch {
	case !exists:
		err = d.account(ctx, "create-user", "--access", ak, "--secret", secret, "--role", role)
	case had != role:
		err = d.account(ctx, "update-user", "--access", ak, "--role", role)
	}
	if err != nil {
		return AccessNone, true, fmt.Errorf("account of the IAM key %s: %w", ak, err)
	}
	d.mu.Lock()
	d.roles[ak] = role
	d.mu.Unlock()
	return a, true, nil
}
