package talos

import (
	"errors"
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"
)

// Mode is the Talos runtime mode a config is validated for. machinery declares the interface
// (validation.RuntimeMode) but its implementations live in Talos itself, so this package carries
// the two it needs, with Talos's own semantics.
type Mode string

const (
	// ModeCloud is an Instance booted from a disk image: nothing to install, no install disk needed.
	ModeCloud Mode = "cloud"
	// ModeMetal is bare metal: the config must say where to install (disk or selector).
	ModeMetal Mode = "metal"
)

func (m Mode) String() string { return string(m) }

// RequiresInstall implements validation.RuntimeMode.
func (m Mode) RequiresInstall() bool { return m == ModeMetal }

// InContainer implements validation.RuntimeMode.
func (m Mode) InContainer() bool { return false }

var _ validation.RuntimeMode = ModeCloud

// Validate parses a machine config the way a node would and runs machinery's validators for mode.
// It returns the validator's warnings; any error carries the validator's own words.
func Validate(cfg []byte, mode Mode) ([]string, error) {
	if mode != ModeCloud && mode != ModeMetal {
		return nil, fmt.Errorf("validate Talos config: unknown mode %q (want %q or %q)", mode, ModeCloud, ModeMetal)
	}

	provider, err := configloader.NewFromBytes(cfg)
	if err != nil {
		return nil, fmt.Errorf("Talos config does not parse: %w", err)
	}

	warnings, err := provider.Validate(mode, validation.WithLocal())
	if err != nil {
		return warnings, fmt.Errorf("Talos config is invalid in %s mode: %w", mode, err)
	}

	if mode.RequiresInstall() && !hasInstallTarget(provider) {
		return warnings, fmt.Errorf("Talos config is invalid in %s mode: %w", mode, errNoInstallTarget)
	}

	return warnings, nil
}

// errNoInstallTarget keeps machinery v1.13's words for a metal config that says nowhere to install.
var errNoInstallTarget = errors.New("either install disk or diskSelector should be defined (.machine.install or an UnattendedInstallConfig document)")

// hasInstallTarget reports whether a config tells a metal node where to install. Since machinery
// v1.14, .machine.install is deprecated in favour of the UnattendedInstallConfig document and no
// longer required, so machinery's metal validation accepts a config with neither: the node would
// then boot without installing. pocbot's worker must install, so Validate requires one of them.
func hasInstallTarget(cfg config.Provider) bool {
	if u := cfg.UnattendedInstallConfig(); u != nil && !u.VolumeSelector().IsZero() {
		return true
	}

	if cfg.Machine() == nil || cfg.Machine().Install() == nil {
		return false
	}

	inst := cfg.Machine().Install()
	if inst.Disk() != "" {
		return true
	}

	expr, err := inst.DiskMatchExpression()

	return err == nil && expr != nil
}
