package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func machineconfigCommand() *command {
	var name, dir string
	var withSecrets bool
	return &command{
		name:    "machineconfig",
		summary: "write the machine configuration each node of a cluster runs, one file per node (secrets redacted unless --with-secrets)",
		env:     envList(envWorld, []string{"POC_RUNNER_CIDR", "POC_RUNNER_ECHO_URL", "POC_READ_RUNNER_ACCESS"}),
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			fs.StringVar(&dir, "o", "", "the directory to write <node>.yaml into (created, mode 0700)")
			fs.BoolVar(&withSecrets, "with-secrets", false, "keep the keys, tokens and CA keys in the files instead of redacting them")
		},
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			if dir == "" {
				return errors.New("machineconfig: -o DIR is required")
			}
			ops, closeOps, err := a.scopedNodeOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			cfgs, err := ops.MachineConfigs(ctx, name, withSecrets)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("machineconfig: %w", err)
			}
			var errs []error
			for _, c := range cfgs {
				if c.Err != nil {
					errs = append(errs, fmt.Errorf("%s (%s): %w", c.Node, c.Addr, c.Err))
					continue
				}
				p := filepath.Join(dir, c.Node+".yaml")
				if err := os.WriteFile(p, c.Config, 0o600); err != nil {
					return fmt.Errorf("machineconfig: write %s: %w", p, err)
				}
				fmt.Fprintf(a.stderr, "wrote the machine config of %s (%s) to %s\n", c.Node, c.Addr, p)
			}
			if len(errs) > 0 {
				return fmt.Errorf("machineconfig of cluster %s: %w (check from an address in admin_cidrs; bot status shows which nodes answer)", name, errors.Join(errs...))
			}
			return nil
		},
	}
}
