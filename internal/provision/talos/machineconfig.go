package talos

import (
	"context"
	"fmt"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
)

// Redacted replaces every secret of a machine configuration MachineConfig returns without its
// secrets (machinery's RedactSecrets: keys, tokens, CA keys).
const Redacted = "******"

// MachineConfigAt reads the configuration a node runs, as `talosctl get machineconfig` shows it:
// the active MachineConfig resource (config namespace, id v1alpha1), over mutual TLS with the
// talosconfig (the resource is Sensitive: os:admin only). Without withSecrets every secret is
// replaced by Redacted. The route is Direct for a control plane, Through one for the worker.
func MachineConfigAt(ctx context.Context, r Route, talosconfig []byte, withSecrets bool) ([]byte, error) {
	ctx, cancel := withDefaultDeadline(ctx, DefaultCallTimeout)
	defer cancel()

	var out []byte

	err := retry(ctx, "machine config of "+r.String(), transient, func(actx context.Context) error {
		return withTrustedAt(actx, r, talosconfig, func(c *nodeAPI) error {
			mc, err := safe.StateGetByID[*configres.MachineConfig](actx, c.COSI, configres.ActiveID)
			if err != nil {
				return err
			}

			p := mc.Provider()
			if !withSecrets {
				p = p.RedactSecrets(Redacted)
			}

			out, err = p.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))

			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the machine config of %s: %w", r, err)
	}

	return out, nil
}
