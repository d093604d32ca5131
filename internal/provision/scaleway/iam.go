package scaleway

import (
	"context"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/provision"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// IAM SSH keys carry no tags: they are found by their EXACT name poc-<cluster>-<role> (the API's
// name filter is partial, so the comparison is done here).
func (d *Driver) sshKeyNode(node string, personKey *string) provision.Node {
	return provision.Node{
		Name: node, Kind: KindSSHKey,
		Apply: func(ctx context.Context, r *provision.Run) error {
			name := r.Name(nameSuffix(r.Spec(), node))
			pub := ""
			if personKey != nil {
				pub = strings.TrimSpace(*personKey)
			} else if k := r.SSHKey(); k != nil {
				pub = k.PublicKey
			} else {
				return fmt.Errorf("ssh key %q: the state holds no generated key pair", name)
			}
			what := fmt.Sprintf("IAM SSH key %q", name)
			_, err := ensure(ctx, r, node, KindSSHKey,
				func(ctx context.Context, id string) (*found, error) {
					k, err := d.iam.GetSSHKey(&iam.GetSSHKeyRequest{SSHKeyID: id}, ctxOpt(ctx))
					if notFound(err) {
						return nil, nil
					}
					if err != nil {
						return nil, classify("get "+what, "", err)
					}
					return &found{id: k.ID, status: "ready"}, nil
				},
				func(ctx context.Context) ([]*found, error) {
					ks, err := d.listKeys(ctx, name)
					if err != nil {
						return nil, classify("list "+what, "", err)
					}
					var out []*found
					for _, k := range ks {
						out = append(out, &found{id: k.ID, status: "ready"})
					}
					return out, nil
				},
				func(ctx context.Context) (*found, error) {
					k, err := d.iam.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: name, PublicKey: pub, ProjectID: d.project}, ctxOpt(ctx))
					if err != nil {
						return nil, classify("create "+what, "", err)
					}
					return &found{id: k.ID, status: "ready"}, nil
				})
			return err
		},
		Destroy: func(ctx context.Context, r *provision.Run) error {
			rec, ok := r.Resource(node)
			if !ok {
				return nil
			}
			return d.deleteKey(ctx, r, rec.ID, r.Name(nameSuffix(r.Spec(), node)))
		},
	}
}

// listKeys returns the project's keys named exactly name.
func (d *Driver) listKeys(ctx context.Context, name string) ([]*iam.SSHKey, error) {
	res, err := d.iam.ListSSHKeys(&iam.ListSSHKeysRequest{Name: &name, ProjectID: &d.project}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return nil, err
	}
	var out []*iam.SSHKey
	for _, k := range res.SSHKeys {
		if k.Name == name {
			out = append(out, k)
		}
	}
	return out, nil
}

func (d *Driver) deleteKey(ctx context.Context, r *provision.Run, id, name string) error {
	err := d.iam.DeleteSSHKey(&iam.DeleteSSHKeyRequest{SSHKeyID: id}, ctxOpt(ctx))
	if notFound(err) {
		return nil
	}
	if err != nil {
		return classify("delete IAM SSH key "+name, "", err)
	}
	r.Deleted(KindSSHKey, id, name)
	return nil
}
