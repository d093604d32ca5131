package talos

import (
	"fmt"

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

	return warnings, nil
}
