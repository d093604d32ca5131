package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/settings"
)

// DefaultFactoryURL is the public Image Factory.
const DefaultFactoryURL = settings.DefaultImageFactoryURL

// FactoryURLEnv names the variable that overrides the factory base URL.
const FactoryURLEnv = "POC_IMAGE_FACTORY_URL"

// Artifact names at the factory.
const (
	ScalewayQCOW2 = "scaleway-amd64.qcow2"
	MetalRawZst   = "metal-amd64.raw.zst"
	// MetalRawXZ is the same raw image compressed with xz, for a rescue
	// system without zstd (the factory serves both: image-factory
	// docs/api.md and internal/profile/profile.go, output formats .xz and .zst).
	MetalRawXZ = "metal-amd64.raw.xz"
)

// FactoryBaseURL returns POC_IMAGE_FACTORY_URL as getenv reads it (os.Getenv, or the bot's own
// environment), or the public factory.
func FactoryBaseURL(getenv func(string) string) string {
	return strings.TrimRight(settings.Env(getenv).String("image-factory-url"), "/")
}

// schematic mirrors the Image Factory's model (pkg/schematic in
// siderolabs/image-factory) for the fields the bot sets, with the same field
// order and omitempty rules: the factory's id is the sha256 of this struct
// marshalled by a yaml.v3-compatible encoder (4-space indent), so computing
// it here gives the same id without asking the factory.
type schematic struct {
	Customization customization `yaml:"customization"`
}

type customization struct {
	SystemExtensions systemExtensions `yaml:"systemExtensions,omitempty"`
}

type systemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty"`
}

// ValidateExtensions checks extension names (e.g. "siderolabs/gvisor").
func ValidateExtensions(extensions []string) error {
	for _, e := range extensions {
		if err := settings.CheckExtension(e); err != nil {
			return fmt.Errorf("talos extension: %w", err)
		}
	}
	return nil
}

// Schematic returns the canonical schematic YAML for the given official
// extensions and its id, the same id the factory answers to POST /schematics.
// Extensions are sorted and de-duplicated first, so that two clusters that
// list the same extensions in another order share one image. No extensions
// give the well-known empty schematic (376567988ad3…).
func Schematic(extensions []string) (yamlDoc []byte, id string) {
	ext := slices.Clone(extensions)
	slices.Sort(ext)
	ext = slices.Compact(ext)
	doc, err := yaml.Marshal(&schematic{Customization: customization{SystemExtensions: systemExtensions{OfficialExtensions: ext}}})
	if err != nil {
		// Marshalling a struct of strings cannot fail; a failure here is a
		// bug in the YAML library, not an input problem.
		panic(fmt.Sprintf("images: marshal schematic: %v", err))
	}
	sum := sha256.Sum256(doc)
	return doc, hex.EncodeToString(sum[:])
}

// ImageURL is the factory URL of one artifact.
func ImageURL(base, id, version, artifact string) string {
	return strings.TrimRight(base, "/") + "/image/" + url.PathEscape(id) + "/" + url.PathEscape(version) + "/" + artifact
}

// ScalewayQCOW2URL is the control planes' image (platform scaleway).
func ScalewayQCOW2URL(base, id, version string) string {
	return ImageURL(base, id, version, ScalewayQCOW2)
}

// MetalRawZstURL is the worker's image (platform metal), written by the
// rescue system.
func MetalRawZstURL(base, id, version string) string {
	return ImageURL(base, id, version, MetalRawZst)
}

// MetalRawXZURL is the worker's image compressed with xz, the fallback when
// the rescue system has no zstd.
func MetalRawXZURL(base, id, version string) string {
	return ImageURL(base, id, version, MetalRawXZ)
}

// InstallerImage is the installer container image of the same schematic,
// for machine.install.image, so that an upgrade keeps the extensions:
// <factory host>/<platform>-installer/<id>:<version>. The registry host is
// the factory's (factory.talos.dev by default); the version gets its "v" if it lacks it. This is
// the one place an installer reference is made (talos.Generate derives its defaults here).
func InstallerImage(base, platform, id, version string) string {
	host := "factory.talos.dev"
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		host = u.Host
	}
	return host + "/" + platform + "-installer/" + id + ":v" + strings.TrimPrefix(version, "v")
}

// ObjectKey is the shared object's key for a schematic and version.
func ObjectKey(id, version string) string {
	return "talos/" + id + "/" + version + "/" + ScalewayQCOW2
}
