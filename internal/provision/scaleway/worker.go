package scaleway

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// WorkerBoot is what a reboot of the Elastic Metal worker leaves: its address and, in rescue, the
// one-time credentials of the rescue system as far as the API shows them (rescue_server may be
// empty or filled late: no recording shows when; the keys passed in ssh_key_ids log in anyway).
type WorkerBoot struct {
	ServerID       string
	IP             string
	RescueUser     string
	RescuePassword string
}

// RebootWorker reboots the worker into rescue ("rescue") or its disk ("normal") and waits until the
// API reports it ready in that boot type. In rescue the cluster's IAM SSH keys are passed in
// ssh_key_ids, the keys the rescue image installs (Elastic Metal API, server actions: "Additional
// SSH public key IDs to configure on rescue image"), so the bot logs in with its own key whatever
// rescue_server holds.
func (d *Driver) RebootWorker(ctx context.Context, r *provision.Run, bootType string) (WorkerBoot, error) {
	rec, err := need(r, NodeWorker)
	if err != nil {
		return WorkerBoot{}, err
	}
	zone := scw.Zone(rec.Zone)
	bt := baremetal.ServerBootType(bootType)
	what := fmt.Sprintf("reboot Elastic Metal worker %s into %s", rec.ID, bootType)
	req := &baremetal.RebootServerRequest{Zone: zone, ServerID: rec.ID, BootType: bt, SSHKeyIDs: []string{}}
	if bt == baremetal.ServerBootTypeRescue {
		for _, node := range []string{NodeSSHKey, NodePersonKey} {
			if k, ok := r.Resource(node); ok && k.ID != "" {
				req.SSHKeyIDs = append(req.SSHKeyIDs, k.ID)
			}
		}
	}
	if err := r.Retry(ctx, what, func(ctx context.Context) error {
		_, err := d.bm.RebootServer(req, ctxOpt(ctx))
		if err != nil {
			return classify(what, string(zone), err)
		}
		return nil
	}); err != nil {
		return WorkerBoot{}, err
	}
	var boot WorkerBoot
	err = r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		s, err := d.bm.GetServer(&baremetal.GetServerRequest{Zone: zone, ServerID: rec.ID}, ctxOpt(ctx))
		if err != nil {
			return false, classify(what, string(zone), err)
		}
		switch s.Status {
		case baremetal.ServerStatusError, baremetal.ServerStatusLocked:
			return false, fmt.Errorf("%s: server is %s: open a ticket with Scaleway or run down then up", what, s.Status)
		case baremetal.ServerStatusReady:
		default:
			return false, nil
		}
		if s.BootType != bt {
			return false, nil
		}
		boot = WorkerBoot{ServerID: s.ID}
		if f := bmFound(s); f.attrs["ipv4"] != "" {
			boot.IP = f.attrs["ipv4"]
		}
		if s.RescueServer != nil {
			boot.RescueUser, boot.RescuePassword = s.RescueServer.User, s.RescueServer.Password
		}
		return true, nil
	})
	if err != nil {
		return WorkerBoot{}, err
	}
	if bt == baremetal.ServerBootTypeRescue && len(req.SSHKeyIDs) == 0 && boot.RescuePassword == "" {
		return WorkerBoot{}, fmt.Errorf("%s: no SSH key recorded to pass in ssh_key_ids and the API gave no rescue password: nothing can log in; run up again", what)
	}
	return boot, nil
}

// RescuePassword waits, within wait, until the worker's rescue_server shows a password, for a
// rescue system whose sudo wants one when the API had not shown it yet.
func (d *Driver) RescuePassword(ctx context.Context, r *provision.Run, wait time.Duration) (string, error) {
	rec, err := need(r, NodeWorker)
	if err != nil {
		return "", err
	}
	zone := scw.Zone(rec.Zone)
	what := fmt.Sprintf("wait for the rescue password of Elastic Metal worker %s", rec.ID)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var pw string
	err = r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		s, err := d.bm.GetServer(&baremetal.GetServerRequest{Zone: zone, ServerID: rec.ID}, ctxOpt(ctx))
		if err != nil {
			return false, classify(what, string(zone), err)
		}
		if s.BootType != baremetal.ServerBootTypeRescue {
			return false, fmt.Errorf("%s: the server left rescue mode (boot type %s)", what, s.BootType)
		}
		if s.RescueServer != nil {
			pw = s.RescueServer.Password
		}
		return pw != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("rescue_server.password still empty after %v: %w", wait, err)
	}
	return pw, nil
}

// ClearUserData removes the cloud-init user data of control plane i. It carries the cluster's
// keys (the Talos machine config) and is only needed for the first boot.
func (d *Driver) ClearUserData(ctx context.Context, r *provision.Run, i int) error {
	rec, err := need(r, NodeServer(i))
	if err != nil {
		return err
	}
	zone := scw.Zone(rec.Zone)
	what := fmt.Sprintf("remove the user data of control plane %s (%s)", NodeServer(i), rec.ID)
	return r.Retry(ctx, what, func(ctx context.Context) error {
		err := d.inst.DeleteServerUserData(&instance.DeleteServerUserDataRequest{Zone: zone, ServerID: rec.ID, Key: userDataKey}, ctxOpt(ctx))
		if err != nil && !notFound(err) {
			return classify(what, string(zone), err)
		}
		return nil
	})
}

// UserDataKeys lists the user-data keys left on control plane i (tests check none is left).
func (d *Driver) UserDataKeys(ctx context.Context, r *provision.Run, i int) ([]string, error) {
	rec, err := need(r, NodeServer(i))
	if err != nil {
		return nil, err
	}
	res, err := d.inst.ListServerUserData(&instance.ListServerUserDataRequest{Zone: scw.Zone(rec.Zone), ServerID: rec.ID}, ctxOpt(ctx))
	if err != nil {
		return nil, classify("list user data of "+NodeServer(i), rec.Zone, err)
	}
	return res.UserData, nil
}
