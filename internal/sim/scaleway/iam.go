package scaleway

import (
	"crypto/md5"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"golang.org/x/crypto/ssh"
)

type sshKey struct {
	ID, Name, PublicKey, Fingerprint, Project string
	Created, Updated                          time.Time
}

func (k *sshKey) json() any {
	c, u := k.Created, k.Updated
	return reshape(&iam.SSHKey{ID: k.ID, Name: k.Name, PublicKey: k.PublicKey, Fingerprint: k.Fingerprint, CreatedAt: &c,
		UpdatedAt: &u, OrganizationID: k.Project, ProjectID: k.Project}, []string{"srn"}, nil)
}

// fingerprint is the API's "256 MD5:aa:bb:… (ssh-ed25519)" form.
func fingerprint(pk ssh.PublicKey) string {
	sum := md5.Sum(pk.Marshal())
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02x", b)
	}
	bits := 256
	if ck, ok := pk.(ssh.CryptoPublicKey); ok {
		if rk, ok := ck.CryptoPublicKey().(interface{ Size() int }); ok {
			bits = rk.Size() * 8
		}
	}
	return fmt.Sprintf("%d MD5:%s (%s)", bits, strings.Join(hex, ":"), pk.Type())
}

func (e *Emulator) createSSHKey(w http.ResponseWriter, r *http.Request) {
	var req iam.CreateSSHKeyRequest
	if !decode(w, r, &req) {
		return
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(req.PublicKey))
	if err != nil {
		invalidArg(w, "public_key", "public_key is not an OpenSSH public key: "+err.Error())
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The real API registers the same public key twice in a project
	// (terraform-provider-scaleway, list-iamssh-keys-basic cassette).
	norm := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
	if !quotas(e, w, e.keys, "ssh_keys", QuotaSSHKeys, nil) {
		return
	}
	now := e.clock().UTC()
	k := &sshKey{ID: e.newID(), Name: req.Name, PublicKey: norm, Fingerprint: fingerprint(pk), Project: req.ProjectID, Created: now, Updated: now}
	e.keys[k.ID] = k
	writeJSON(w, http.StatusOK, k.json())
}

func (e *Emulator) listSSHKeys(w http.ResponseWriter, r *http.Request) {
	serveMap(e, w, r, "ssh_keys", func() map[string]*sshKey { return e.keys }, func(k *sshKey, q url.Values) bool {
		return nameMatch(k.Name, q.Get("name")) && (q.Get("project_id") == "" || q.Get("project_id") == k.Project)
	}, (*sshKey).json)
}

func (e *Emulator) oneSSHKey(w http.ResponseWriter, r *http.Request) {
	serveOne(e, w, r, r.PathValue("id"), single[*sshKey]{find: inMap(e.keys), notFound: named(blockNotFound, "ssh_key"),
		json: (*sshKey).json, badMethod: methodNotAllowed,
		patch: func(w http.ResponseWriter, r *http.Request, k *sshKey) bool {
			var req struct {
				Name *string `json:"name"`
			}
			if !decode(w, r, &req) {
				return false
			}
			set(&k.Name, req.Name)
			return e.touched(&k.Updated)
		},
		del: func(w http.ResponseWriter, k *sshKey) {
			delete(e.keys, k.ID)
			e.deleted("iam_ssh_key", k.ID)
			noContent(w)
		}})
}
