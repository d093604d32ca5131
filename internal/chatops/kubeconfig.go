package chatops

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
	"filippo.io/age/agessh"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/statestore"
)

// recipients turns a user's public SSH keys (as GitHub lists them) into age recipients. Key types
// age cannot encrypt to (ecdsa, security keys) are skipped, not fatal: one usable key is enough.
func recipients(keys []string) ([]age.Recipient, []string) {
	var out []age.Recipient
	var skipped []string
	for _, k := range keys {
		rc, err := agessh.ParseRecipient(strings.TrimSpace(k))
		if err != nil {
			kind, _, _ := strings.Cut(strings.TrimSpace(k), " ")
			skipped = append(skipped, kind)
			continue
		}
		out = append(out, rc)
	}
	return out, skipped
}

// encrypt seals data to every recipient (any one of the matching private keys opens it).
func encrypt(data []byte, to []age.Recipient) ([]byte, error) {
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, to...)
	if err != nil {
		return nil, fmt.Errorf("age: start encryption: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("age: encrypt: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("age: finish encryption: %w", err)
	}
	return buf.Bytes(), nil
}

// issueKubeconfig hands the requester, who holds neither the state key nor bucket credentials,
// the cluster's kubeconfig: encrypted with age to their public SSH keys from GitHub, stored as a
// public object under an unguessable key, reachable through a short-lived presigned URL. The
// ciphertext is safe anywhere; only the requester's private key opens it. kc is the kubeconfig
// (the outcome's: an up's state, a kubeconfig's read).
func (r *run) issueKubeconfig(ctx context.Context, kc []byte) (commands.KubeconfigAccess, error) {
	login := r.ev.Sender
	acc := commands.KubeconfigAccess{Login: login, OperatorCmd: "bot kubeconfig --cluster " + r.cluster}
	// The verbs' policy already holds this; a kubeconfig is cluster-admin, so the one place that
	// issues it checks again rather than trust every path that reaches it.
	if !commands.Allowed(r.perm, commands.PermWrite) {
		return acc, fmt.Errorf("no kubeconfig for %s: it needs write permission on the repository, and GitHub answered %q", login, r.perm)
	}
	// The event named an account by id and login; an `up` lasts minutes, long enough for a
	// rename and a re-registration of the login by someone else. The keys are fetched by login
	// (the only form GitHub serves them in), so the binding id ↔ login is checked before the
	// fetch and again right before encrypting.
	if m, err := r.checkRequester(ctx, "before fetching the keys"); err != nil || m != nil {
		acc.Renamed = m
		return acc, err
	}
	keys, err := r.h.GitHub.UserSSHKeys(ctx, login)
	if err != nil {
		return acc, fmt.Errorf("list %s's public SSH keys on GitHub: %w", login, err)
	}
	to, skipped := recipients(keys)
	if len(skipped) > 0 {
		r.h.log().Info("SSH keys age cannot encrypt to were skipped", "user", login, "types", strings.Join(skipped, ","))
	}
	if len(to) == 0 {
		acc.NoKeys, acc.Unusable = true, skipped
		return acc, nil
	}
	if len(kc) == 0 {
		return acc, fmt.Errorf("cluster %q has no kubeconfig yet: run up until it completes", r.cluster)
	}
	b := r.backend
	for _, secret := range kubecert.MaskValues(kc) {
		r.mask(secret)
	}
	if m, err := r.checkRequester(ctx, "before encrypting"); err != nil || m != nil {
		acc.Renamed = m
		return acc, err
	}
	sealed, err := encrypt(kc, to)
	if err != nil {
		return acc, err
	}
	rnd := make([]byte, 16)
	if _, err := rand.Read(rnd); err != nil {
		return acc, fmt.Errorf("random name for the kubeconfig object: %w", err)
	}
	// The random part keeps one user's link from naming another's object.
	key := clusterops.PublicKubeconfigDir(r.cluster) + "/" + hex.EncodeToString(rnd) + ".age"
	if err := b.Ops.Store.PutPublic(ctx, key, sealed); err != nil {
		return acc, fmt.Errorf("store the encrypted kubeconfig: %w", err)
	}
	ttl := r.h.linkTTL()
	u, err := b.Ops.Store.SignedURL(ctx, key, ttl)
	var dead *statestore.DeadLinkError
	if errors.As(err, &dead) {
		// Never posted as if it worked: the reply says what it answered and what to fix.
		r.h.log().Error("the fresh kubeconfig link does not work: not posted", "cluster", r.cluster, "err", err)
		answer := dead.Status
		if answer == "" {
			answer = "nothing (the bucket's endpoint could not be reached)"
		}
		acc.DeadLink = &commands.DeadLink{Answer: answer, Fix: dead.Fix}
		return acc, nil
	}
	if err != nil {
		return acc, fmt.Errorf("presign the kubeconfig link: %w", err)
	}
	acc.URL, acc.URLExpires, acc.Recipients = u, r.h.now().Add(ttl), len(to)
	if strings.HasPrefix(u, "file://") {
		// A file:// state bucket cannot sign URLs: the link only works on the machine that ran
		// the bot (the demo's default without versitygw).
		r.h.log().Warn("the state bucket is file://: the kubeconfig link is a local file path, not a presigned URL")
	}
	return acc, nil
}

// kubeconfigAnswer answers `/poc kubeconfig`: a fresh link.
func (r *run) kubeconfigAnswer(ctx context.Context, res *clusterops.Outcome) error {
	acc, err := r.issueKubeconfig(ctx, res.Kubeconfig)
	if err != nil {
		return r.fail(ctx, err)
	}
	if acc.Renamed != nil {
		return r.refuse(ctx, "requester account changed", commands.RenderKubeconfig(r.cluster, acc, r.h.now()))
	}
	if acc.DeadLink != nil {
		return r.refuse(ctx, "dead link", commands.RenderKubeconfig(r.cluster, acc, r.h.now()))
	}
	if _, err := r.reply(ctx, commands.RenderKubeconfig(r.cluster, acc, r.h.now())); err != nil {
		return err
	}
	if acc.URL != "" {
		r.setOutput("kubeconfig_url", acc.URL)
	}
	r.out.OK = true
	r.react(ctx, "hooray")
	return nil
}
