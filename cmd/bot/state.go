package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

func stateLsCommand() *command {
	return &command{
		name:     "ls",
		summary:  "list the clusters' public headers without decrypting anything",
		env:      []string{"POC_STATE_URL"},
		setFlags: func(fs *flag.FlagSet, e *envFlags) {},
		run:      func(ctx context.Context, a *app, fs *flag.FlagSet) error { return a.stateList(ctx) },
	}
}

func stateShowCommand() *command {
	var name string
	return &command{
		name:    "show",
		summary: "decrypt and print one cluster's state, secret values redacted",
		env:     envStore,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error { return a.stateShow(ctx, name) },
	}
}

func stateUnlockCommand() *command {
	var name, lockID string
	return &command{
		name:    "unlock",
		summary: "force-release a cluster's lock held by a dead run (like tofu force-unlock)",
		env:     []string{"POC_STATE_URL"},
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			e.String(&lockID, "lock-id", "", "", "the id of the lock to release, as `bot state show` or the busy-lock error names it")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error { return a.stateUnlock(ctx, name, lockID) },
	}
}

// stateList prints the clusters' public headers (`bot state ls`).
func (a *app) stateList(ctx context.Context) error {
	s, err := a.openStoreNoKey(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	// With the key, the headers are authenticated (a bad one is named in the
	// error); without it they are shown as the bucket holds them, for display only.
	list := s.List
	if !a.env().Given("state-key") {
		list = s.ListUnverified
		fmt.Fprintf(a.stderr, "headers not authenticated (no %s): anyone who can write to the bucket can change them\n", statestore.EnvStateKey)
	}
	hs, err := list(ctx)
	if err != nil {
		return err
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Cluster < hs[j].Cluster })
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tPHASE\tREPOSITORY\tNUMBER\tREQUESTED BY\tCREATED\tEXPIRES\tSERIAL")
	for _, h := range hs {
		num := "-" // an operator's cluster has no issue
		if h.Number > 0 {
			num = strconv.Itoa(h.Number)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", h.Cluster, h.Phase, orDash(h.Repository), num, h.RequestedBy,
			h.Created.Format(time.RFC3339), fmtTime(h.Expires), h.Serial)
	}
	return tw.Flush()
}

// stateShow prints one cluster's header, its state with the secret values redacted, and its
// lock (`bot state show`).
func (a *app) stateShow(ctx context.Context, name string) error {
	ops, closeOps, err := a.clusterOps(ctx, name)
	if err != nil {
		return err
	}
	defer closeOps()
	s := ops.Store
	doc, st, err := ops.Load(ctx, name)
	if err != nil {
		return err
	}
	lock, err := s.ReadLock(ctx, name)
	if err != nil {
		return err
	}
	out := map[string]any{"header": doc.Header, "state": redactState(st), "lock": lock}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// stateUnlock force-releases a cluster's lock by its id (`bot state unlock`).
func (a *app) stateUnlock(ctx context.Context, name, lockID string) error {
	if err := requireCluster(name); err != nil {
		return err
	}
	if lockID == "" {
		return fmt.Errorf("--lock-id is required: copy it from `bot state show --cluster %s`", name)
	}
	s, err := a.openStoreNoKey(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.ForceUnlock(ctx, name, lockID); err != nil {
		return err
	}
	a.printf("released lock %s of cluster %s\n", lockID, name)
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// redactState prints the state's shape: secret values are replaced by their length.
func redactState(st *provision.State) map[string]any {
	secrets := map[string]string{}
	for k, v := range st.Secrets {
		if len(v) > 0 {
			secrets[k] = fmt.Sprintf("[redacted: %d bytes]", len(v))
		}
	}
	var sshKey map[string]string
	if st.SSHKey != nil {
		sshKey = map[string]string{"public_key": st.SSHKey.PublicKey, "private_key": "[redacted]"}
	}
	return map[string]any{
		"version": st.Version, "cluster_id": st.ClusterID, "spec": st.Spec, "resources": st.Resources,
		"triggers": st.Triggers, "outputs": st.Outputs, "secrets": secrets, "ssh_key": sshKey,
		"cancel_requested": st.CancelRequested, "updated_at": st.UpdatedAt,
	}
}
