package talos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	blockpb "github.com/siderolabs/talos/pkg/machinery/api/resource/definitions/block"
	"github.com/siderolabs/talos/pkg/machinery/cel/celenv"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Disk is one block device a node reports.
type Disk struct {
	// Path is the device path, e.g. /dev/nvme0n1.
	Path string
	// System is true for the disk Talos booted from (block.SystemDisk; system_disk in CEL).
	System bool
	// Spec is the disk as a CEL disk selector sees it (disk.dev_path, disk.size, ...).
	Spec *blockpb.DiskSpec
}

func (d Disk) String() string {
	if d.System {
		return d.Path + " (system disk)"
	}

	return d.Path
}

// DiskPaths lists the disks' paths.
func DiskPaths(disks []Disk) []string {
	out := make([]string, 0, len(disks))
	for _, d := range disks {
		out = append(out, d.Path)
	}

	return out
}

// listDisks reads a node's disks the way Talos means them to be read: the COSI block.Disk
// resources and the block.SystemDisk singleton. A node that does not serve them (an API without
// the resource service) is asked through StorageService.Disks, which Talos keeps for compatibility.
func listDisks(ctx context.Context, c *nodeAPI) ([]Disk, error) {
	list, err := safe.StateListAll[*block.Disk](ctx, c.COSI)
	if err != nil {
		if status.Code(err) != codes.Unimplemented {
			return nil, fmt.Errorf("list block.Disk resources: %w", err)
		}

		return legacyDisks(ctx, c)
	}

	system := ""

	sd, err := safe.StateGetByID[*block.SystemDisk](ctx, c.COSI, block.SystemDiskID)

	switch {
	case err == nil:
		system = sd.TypedSpec().DevPath
	case state.IsNotFoundError(err) || status.Code(err) == codes.NotFound:
		// no system disk: booted from elsewhere (ISO, PXE) or not found yet
	default:
		return nil, fmt.Errorf("get the block.SystemDisk resource: %w", err)
	}

	var disks []Disk

	for d := range list.All() {
		s := d.TypedSpec()
		if s.CDROM || s.Readonly {
			continue // never an install target
		}

		disks = append(disks, Disk{Path: s.DevPath, System: s.DevPath == system, Spec: &blockpb.DiskSpec{
			DevPath: s.DevPath, Size: s.Size, PrettySize: s.PrettySize, IoSize: uint64(s.IOSize), SectorSize: uint64(s.SectorSize),
			Model: s.Model, FirmwareVersion: s.FirmwareVersion, Serial: s.Serial, Modalias: s.Modalias, Wwid: s.WWID,
			Uuid: s.UUID, BusPath: s.BusPath, SubSystem: s.SubSystem, Transport: s.Transport, Rotational: s.Rotational,
			SecondaryDisks: s.SecondaryDisks, Symlinks: s.Symlinks,
		}})
	}

	return disks, nil
}

func legacyDisks(ctx context.Context, c *nodeAPI) ([]Disk, error) {
	resp, err := c.Disks(ctx)
	if err != nil {
		return nil, fmt.Errorf("list disks (StorageService.Disks, the node serves no block.Disk resources): %w", err)
	}

	var disks []Disk

	for _, m := range resp.GetMessages() {
		for _, d := range m.GetDisks() {
			if d.GetReadonly() {
				continue
			}

			disks = append(disks, Disk{Path: d.GetDeviceName(), System: d.GetSystemDisk(), Spec: &blockpb.DiskSpec{
				DevPath: d.GetDeviceName(), Size: d.GetSize(), Model: d.GetModel(), Serial: d.GetSerial(),
				Modalias: d.GetModalias(), Wwid: d.GetWwid(), Uuid: d.GetUuid(), BusPath: d.GetBusPath(), SubSystem: d.GetSubsystem(),
			}})
		}
	}

	return disks, nil
}

// ErrNoInstallDisk is returned when a config's install target matches none of a node's disks.
var ErrNoInstallDisk = errors.New("install disk not on the node")

// InstallDisk finds the disk a config installs Talos to among a node's disks, for both contracts:
// .machine.install.disk (up to 1.13) by path, or the UnattendedInstallConfig document's CEL disk
// selector (1.14), evaluated as Talos evaluates it (disk and system_disk variables). The first
// matching disk is returned, as the installer picks the first match. A config with no install
// target answers "" and no error (nothing to check).
func InstallDisk(cfg config.Provider, disks []Disk) (string, error) {
	if u := cfg.UnattendedInstallConfig(); u != nil && !u.VolumeSelector().IsZero() {
		sel := u.VolumeSelector()

		for _, d := range disks {
			ok, err := sel.EvalBool(celenv.DiskLocator(), map[string]any{"disk": d.Spec, "system_disk": d.System})
			if err != nil {
				return "", fmt.Errorf("evaluate the install disk selector %q on %s: %w", sel.String(), d.Path, err)
			}

			if ok {
				return d.Path, nil
			}
		}

		return "", fmt.Errorf("%w: the UnattendedInstallConfig disk selector %q matches none of %s", ErrNoInstallDisk, sel.String(), diskList(disks))
	}

	if cfg.Machine() == nil {
		return "", nil
	}

	disk := cfg.Machine().Install().Disk()
	if disk == "" {
		return "", nil
	}

	if !slices.ContainsFunc(disks, func(d Disk) bool { return d.Path == disk }) {
		return "", fmt.Errorf("%w: .machine.install.disk %s is not among %s", ErrNoInstallDisk, disk, diskList(disks))
	}

	return disk, nil
}

func diskList(disks []Disk) string {
	if len(disks) == 0 {
		return "no disks"
	}

	s := make([]string, 0, len(disks))
	for _, d := range disks {
		s = append(s, d.String())
	}

	return "[" + strings.Join(s, ", ") + "]"
}
