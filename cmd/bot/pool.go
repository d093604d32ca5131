package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pocbot/pocbot/internal/pool/poolstore"
)

func poolLsCommand() *command {
	return &command{
		name:     "ls",
		summary:  "list the parked workers (decrypts the pool document)",
		env:      envStore,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			s, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			d, err := (&poolstore.Pool{Store: s}).List(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tIP\tZONE\tOFFER\tTALOS\tSCHEMATIC\tPARKED FROM\tPARKED UNTIL\tCLAIMED BY")
			for _, w := range d.Workers {
				sch := w.Schematic
				if len(sch) > 12 {
					sch = sch[:12]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ServerID, w.IP, w.Zone, w.Offer, w.TalosVersion, sch,
					orDash(w.ParkedFrom), w.ParkedUntil.UTC().Format(time.RFC3339), orDash(w.ClaimedBy))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			a.printf("%d parked workers (billed while parked)\n", len(d.Workers))
			return nil
		},
	}
}

func poolRmCommand() *command {
	var server string
	return &command{
		name:    "rm",
		summary: "delete a parked worker and drop it from the pool (only while it is tagged pocbot-parked)",
		env:     envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.String(&server, "server", "", "", "the parked server's id, as `bot pool ls` lists it")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if server == "" {
				return errors.New("pool rm: --server is required: copy the id from `bot pool ls`")
			}
			w, err := a.openWorld(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			p := &poolstore.Pool{Store: w.store}
			d, err := p.List(ctx)
			if err != nil {
				return err
			}
			entry, ok := d.Find(server)
			if !ok {
				return fmt.Errorf("pool rm: server %s is not in the pool (`bot pool ls` lists it)", server)
			}
			deleted, err := w.driver.DeleteParked(ctx, entry.Zone, server)
			if err != nil {
				return fmt.Errorf("pool rm %s: %w", server, err)
			}
			if err := p.Remove(ctx, server); err != nil {
				return err
			}
			if !deleted {
				a.printf("server %s no longer carries the parked tag (adopted): dropped from the pool, not deleted\n", server)
				return nil
			}
			a.printf("deleted parked worker %s and dropped it from the pool\n", server)
			return nil
		},
	}
}
